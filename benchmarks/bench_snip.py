"""What gradient-based importance (SNIP, mathneuro.snip) costs against MathNeuro's forward passes.

On the same model and the same texts (GSM8K's train problems from ../shared/data when present,
else the toy's math), it times, interleaved over several repeats (median reported):

(a) ``collect``  ``mathneuro.collect_statistics``: batched forward passes, hooks summing each
                 input feature's per-sample norm (what MathNeuro's sets are made from);
(b) ``snip``     ``mathneuro.snip.snip_scores``: each text alone through the model, forward and
                 back, Σ |W ⊙ ∇W L| per sample into a score matrix per target;

and the peak RSS growth of each (the weights' gradients and the score matrices against one
float32 per input feature), and prints b/a for both. It also reports how far the two
importances' top-5% sets of these texts agree (Jaccard over all target matrices).

Models: ``toy`` (the trained toy, results/models/toy: run the default first), ``smollm2``
(SmolLM2-135M-Instruct dequantized from models/ into a temporary folder: bash ci/fetch_smollm2.sh),
or any local Hugging Face folder.

Run from the repository root:  .venv/bin/python benchmarks/bench_snip.py --model toy [--model smollm2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from memory import exact_rss_allocator, peak_rss_growth  # benchmarks/memory.py, beside this script
from mathneuro import collect_statistics, find_targets, top_k
from mathneuro.data import load_texts
from mathneuro.masks import overlap
from mathneuro.models import load_model
from mathneuro.snip import snip_scores

REPO = Path(__file__).resolve().parents[1]
GSM8K = REPO / ".." / "shared" / "data" / "gsm8k" / "train.jsonl"
SMOLLM2 = REPO / "models" / "SmolLM2-135M-Instruct"


def model_folder(name: str, scratch: Path) -> Path:
    """The folder of model ``name``: the toy's, SmolLM2 dequantized, or a local folder."""
    if name == "toy":
        folder = REPO / "results" / "models" / "toy"
        if not folder.is_dir():
            raise SystemExit(f"{folder} is missing: run the default study first (snakemake --cores all)")
        return folder
    if name == "smollm2":
        from mathneuro.gguf import dequantize

        out = scratch / "smollm2"
        dequantize(str(SMOLLM2), "SmolLM2-135M-Instruct.Q4_1.gguf", out, log=lambda _: None)
        return out
    return Path(name)


def texts(n: int) -> list[str]:
    if GSM8K.is_file():
        spec = {"source": "json", "path": str(GSM8K), "template": "Question: {question}\nAnswer: {answer}"}
    else:
        spec = {"source": "synthetic", "task": "math", "n_train": 1000, "n_test": 0}
    return list(load_texts({**spec, "n": n, "seed": 0}))


def measure(name: str, args: argparse.Namespace, scratch: Path) -> None:
    model, tokenizer = load_model(str(model_folder(name, scratch)), dtype="float32", device="cpu")
    targets = find_targets(model)
    batch = texts(args.n_texts)
    runs = {
        "collect": lambda: collect_statistics(model, tokenizer, batch, batch_size=args.batch_size,
                                              max_length=args.max_length, targets=targets),
        "snip": lambda: snip_scores(model, tokenizer, batch, max_length=args.max_length, targets=targets),
    }
    seconds = {key: [] for key in runs}
    for _ in range(args.repeats):  # interleaved, so a busy machine slows both alike
        for key, run in runs.items():
            start = time.perf_counter()
            run()
            seconds[key].append(time.perf_counter() - start)
    exact_rss_allocator()
    memory = {key: peak_rss_growth(run) for key, run in runs.items()}
    masks = {key: top_k(model, run(), args.fraction, targets=targets) for key, run in runs.items()}
    agree = overlap(masks["collect"], masks["snip"])
    parameters = sum(p.numel() for p in model.parameters())
    median = {key: statistics.median(times) for key, times in seconds.items()}
    print(f"{name}: {parameters / 1e6:.1f}M parameters, {len(targets)} target matrices, {len(batch)} texts of at most "
          f"{args.max_length} tokens, collected in batches of {args.batch_size} (SNIP: one text at a time), "
          f"{torch.get_num_threads()} thread(s)")
    print("| importance | time (median of %d) | peak RSS growth |" % args.repeats)
    print("|---|---|---|")
    for key in runs:
        print(f"| {key} | {median[key]:.2f} s | {memory[key] / 2**20:.0f} MiB |")
    print(f"snip / collect: time {median['snip'] / median['collect']:.1f}x, "
          f"memory {memory['snip'] / max(1, memory['collect']):.1f}x; top-{100 * args.fraction:g}% sets: "
          f"Jaccard {agree['jaccard']:.2f}, overlap rate {agree['overlap_rate']:.2f}")


def model_parser(description: str) -> argparse.ArgumentParser:
    """The options every model benchmark here takes: the models, texts' length, batch size, threads."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="toy, smollm2 or a local folder (repeatable; default toy)")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    return parser


def measure_each_model(args: argparse.Namespace, measure: Callable[[str, argparse.Namespace, Path], None]) -> None:
    """``measure(name, args, scratch)`` for every ``--model``, on ``--threads`` threads."""
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.model or ["toy"]:
            measure(name, args, Path(scratch))


def main(argv: Sequence[str] | None = None) -> None:
    parser = model_parser(__doc__)
    parser.add_argument("--n-texts", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fraction", type=float, default=0.05)
    measure_each_model(parser.parse_args(argv), measure)


if __name__ == "__main__":
    main()
