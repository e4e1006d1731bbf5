"""Benchmark activation-statistics collection against a plain forward and the naive way.

On a random ~50M-parameter ``LlamaForCausalLM`` (CPU, built from a config; a small BPE
tokenizer is trained in-process on the benchmark texts, so nothing is downloaded) it times,
interleaved over several repeats (median reported):

(a) ``plain``   tokenize + the same sorted, right-padded batches through the decoder, no hooks;
(b) ``collect`` ``mathneuro.collect_statistics`` (hooks accumulate one float32 per input feature);
(c) ``naive``   the original code's way: one sample at a time, and for every matrix
                ``acc += |W| * norm`` into a weight-sized float32 accumulator.

It prints b/a (collection overhead; target <= 1.10) and c/b, checks that (c)'s weight-sized
sum equals |W| * stat from (b), and reports memory: peak RSS growth of each method, the
accumulator bytes of (b) (sum of in_features * 4) vs the parameter bytes (what (c) keeps), and
the bytes on disk of a saved math-minus-non-math mask vs one bit per parameter.

Run from the repository root:  .venv/bin/python benchmarks/bench_collect.py  [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

import mathneuro
from memory import exact_rss_allocator, peak_rss_growth  # benchmarks/memory.py, beside this script
from mathneuro.data import load_texts
from mathneuro.targets import Target, find_targets

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
GSM8K_TEMPLATE = "Question: {question}\nAnswer: {answer}"
MMLU_TEMPLATE = "{question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {answer}"


# --------------------------------------------------------------------------- inputs


def text_specs(n: int, seed: int) -> tuple[dict, dict, str]:
    """Dataset specs for math and non-math texts: real data if present, else synthetic."""
    gsm8k, mmlu = SHARED_DATA / "gsm8k" / "train.jsonl", SHARED_DATA / "mmlu" / "test"
    if gsm8k.is_file() and mmlu.is_dir():
        math = {"source": "json", "path": str(gsm8k), "template": GSM8K_TEMPLATE, "n": n, "seed": seed}
        other = {"source": "csv", "path": str(mmlu / "*_test.csv"), "template": MMLU_TEMPLATE,
                 "columns": ["question", "A", "B", "C", "D", "answer"], "n": n, "seed": seed}
        return math, other, "GSM8K train / MMLU test (../shared/data)"
    synthetic = {"source": "synthetic", "n_train": 4 * n, "n_test": 1, "n": n, "seed": seed}
    return {**synthetic, "task": "math"}, {**synthetic, "task": "reading"}, "synthetic math / reading"


def build_tokenizer(texts: Sequence[str], vocab_size: int):
    """A byte-level BPE tokenizer trained on ``texts`` in-process, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "<s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="<s>")


def build_model(vocab_size: int, layers: int, seed: int) -> nn.Module:
    """A random LlamaForCausalLM: hidden 512, MLP 1536, 8 heads (~3.4M parameters per layer)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=512,
        intermediate_size=1536,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=8,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=1,
    )
    return LlamaForCausalLM(config).eval()


# --------------------------------------------------------------------------- the three methods


def sorted_batches(tokenizer, texts: Sequence[str], batch_size: int, max_length: int) -> Iterator[tuple]:
    """Tokenize and yield right-padded (ids, mask) batches sorted by length, as collect does."""
    ids = [seq[:max_length] for seq in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        chunk = [ids[i] for i in order[start : start + batch_size]]
        width = max(len(seq) for seq in chunk)
        input_ids = torch.full((len(chunk), width), tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, seq in enumerate(chunk):
            input_ids[row, : len(seq)] = torch.tensor(seq)
            attention[row, : len(seq)] = 1
        yield input_ids, attention


def plain_forward(model: nn.Module, tokenizer, texts: Sequence[str], batch_size: int, max_length: int) -> None:
    """(a) The decoder body over the same batches, no hooks (collect also skips the LM head)."""
    body = getattr(model, "base_model", model)
    with torch.inference_mode():
        for input_ids, attention in sorted_batches(tokenizer, texts, batch_size, max_length):
            body(input_ids=input_ids, attention_mask=attention, use_cache=False)


def naive_scores(model: nn.Module, tokenizer, texts: Sequence[str], max_length: int,
                 targets: Sequence[Target], split: dict[str, float]) -> dict[str, torch.Tensor]:
    """(c) Per sample: forward alone, then ``acc[W] += |W| * ||x_j||`` for every matrix.

    ``split`` receives the seconds spent in forwards and in the weight-sized accumulation.
    """
    acc = {t.name: torch.zeros(t.weight.shape, dtype=torch.float32) for t in targets}
    norms: dict[str, torch.Tensor] = {}

    def hook_for(name: str) -> Callable:
        def hook(module: nn.Module, args: tuple) -> None:
            norms[name] = args[0][0].float().norm(dim=0)  # (d_in,) over this sample's tokens

        return hook

    handles = [t.module.register_forward_pre_hook(hook_for(t.name)) for t in targets]
    body = getattr(model, "base_model", model)
    try:
        with torch.inference_mode():
            for text in texts:
                ids = tokenizer(text, add_special_tokens=True)["input_ids"][:max_length]
                start = time.perf_counter()
                body(input_ids=torch.tensor([ids]), use_cache=False)
                middle = time.perf_counter()
                for t in targets:
                    acc[t.name] += t.weight.abs() * norms[t.name][None, :]
                split["forward"] += middle - start
                split["accumulate"] += time.perf_counter() - middle
    finally:
        for handle in handles:
            handle.remove()
    return acc


# --------------------------------------------------------------------------- measuring


@contextmanager
def timed(wall: list[float], cpu: list[float]) -> Iterator[None]:
    """Append the block's wall seconds and this process's CPU seconds (all threads)."""
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    yield
    wall.append(time.perf_counter() - start_wall)
    cpu.append(time.process_time() - start_cpu)


def check_naive_matches(targets: Sequence[Target], naive: dict[str, torch.Tensor], stats) -> float:
    """Largest relative error between (c)'s sum and |W| * stat from (b)."""
    worst = 0.0
    for t in targets:
        expected = t.importance(stats.stats[t.name])
        worst = max(worst, float(((naive[t.name] - expected).abs().max() / expected.abs().max())))
    return worst


def mask_on_disk(model: nn.Module, math_stats, other_stats, fraction: float) -> dict[str, float]:
    """Save TopK(math) - TopK(non-math) and compare its file size to 1 bit per parameter."""
    diff = mathneuro.top_k(model, math_stats, fraction) - mathneuro.top_k(model, other_stats, fraction)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mask.safetensors"
        diff.save(path)
        size = path.stat().st_size
    return {"selected": diff.count(), "numel": diff.numel(), "bytes": size,
            "bits_per_param": 8 * size / diff.numel()}


def spread_subset(texts: Sequence[str], k: int) -> list[str]:
    """``k`` texts spread evenly over ``texts`` (all of them if ``k >= len``)."""
    step = max(1, len(texts) // max(1, k))
    return list(texts)[::step][:k]


def count_tokens(tokenizer, texts: Sequence[str], max_length: int) -> int:
    """Tokens the methods see (after truncation)."""
    return sum(min(len(seq), max_length) for seq in tokenizer(list(texts))["input_ids"])


def time_interleaved(methods: dict[str, Callable[[], object]], repeats: int) -> tuple[dict, dict]:
    """Wall and CPU seconds of every method, run in rotated order ``repeats`` times."""
    wall: dict[str, list[float]] = {name: [] for name in methods}
    cpu: dict[str, list[float]] = {name: [] for name in methods}
    order = list(methods)
    for repeat in range(repeats):
        for name in order[repeat % len(order) :] + order[: repeat % len(order)]:
            with timed(wall[name], cpu[name]):
                methods[name]()
    return wall, cpu


def run(args: argparse.Namespace) -> dict:
    """Build everything, time the three methods interleaved, and return the numbers.

    (a) and (b) run on all texts; (c) on ``--naive-texts`` of them, spread evenly, and its
    times are scaled to all texts by token count (it costs the same per token every sample).
    """
    torch.set_num_threads(args.threads)
    math_spec, other_spec, text_source = text_specs(args.n_texts, args.seed)
    texts, other_texts = load_texts(math_spec), load_texts(other_spec)
    tokenizer = build_tokenizer(list(texts) + list(other_texts), args.vocab)
    model = build_model(len(tokenizer), args.layers, args.seed)
    targets = find_targets(model)
    subset = spread_subset(texts, args.naive_texts)
    n_tokens = count_tokens(tokenizer, texts, args.max_length)
    scale = n_tokens / count_tokens(tokenizer, subset, args.max_length)
    split = {"forward": 0.0, "accumulate": 0.0}
    collect = lambda batch: mathneuro.collect_statistics(  # noqa: E731
        model, tokenizer, batch, batch_size=args.batch_size, max_length=args.max_length)
    methods = {
        "plain": lambda: plain_forward(model, tokenizer, texts, args.batch_size, args.max_length),
        "collect": lambda: collect(texts),
        "naive": lambda: naive_scores(model, tokenizer, subset, args.max_length, targets, split),
    }

    plain_forward(model, tokenizer, subset, args.batch_size, args.max_length)  # warm-up, untimed
    error = check_naive_matches(targets, methods["naive"](), collect(subset))  # also warms up
    split.update(forward=0.0, accumulate=0.0)
    wall, cpu = time_interleaved(methods, args.repeats)
    naive_share = split["accumulate"] / sum(wall["naive"])
    for times in (wall, cpu):
        times["naive"] = [t * scale for t in times["naive"]]
    mask = mask_on_disk(model, collect(texts), collect(other_texts), args.fraction)

    exact = exact_rss_allocator()  # untimed memory pass: the peak is per batch / per sample
    first = list(texts[: args.batch_size])
    peaks = {
        "plain": peak_rss_growth(lambda: plain_forward(model, tokenizer, first, args.batch_size, args.max_length)),
        "collect": peak_rss_growth(lambda: collect(first)),
        "naive": peak_rss_growth(lambda: naive_scores(model, tokenizer, subset[:1], args.max_length, targets, split)),
    }
    med = {name: statistics.median(ts) for name, ts in wall.items()}
    med_cpu = {name: statistics.median(ts) for name, ts in cpu.items()}
    target_params = sum(t.weight.numel() for t in targets)
    return {
        "machine": f"{torch.get_num_threads()} torch thread(s), {os.cpu_count()} CPUs visible, "
                   f"load average {os.getloadavg()[0]:.1f}, torch {torch.__version__}",
        "texts": f"{len(texts)} texts, {text_source}, {n_tokens} tokens (max_length {args.max_length}); "
                 f"naive on {len(subset)} of them, scaled x{scale:.2f} by tokens",
        "model": f"LlamaForCausalLM {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
                 f"{len(targets)} target matrices ({target_params / 1e6:.1f}M), vocab {len(tokenizer)}",
        "repeats": args.repeats,
        "seconds_median": med,
        "cpu_seconds_median": med_cpu,
        "seconds_all": wall,
        "cpu_seconds_all": cpu,
        "ratio_collect_over_plain": med["collect"] / med["plain"],
        "ratio_naive_over_collect": med["naive"] / med["collect"],
        "cpu_ratio_collect_over_plain": med_cpu["collect"] / med_cpu["plain"],
        "cpu_ratio_naive_over_collect": med_cpu["naive"] / med_cpu["collect"],
        "naive_accumulate_share": naive_share,
        "naive_max_relative_error": error,
        "peak_rss_growth_bytes": peaks,
        "peak_rss_exact_allocator": exact,
        "collect_accumulator_bytes": sum(t.in_features for t in targets) * 4,
        "naive_accumulator_bytes": target_params * 4,
        "parameter_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "mask": mask,
    }


def report(r: dict) -> str:
    """Human-readable summary of ``run``'s numbers."""
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    med, med_cpu, peak = r["seconds_median"], r["cpu_seconds_median"], r["peak_rss_growth_bytes"]
    lines = [
        f"machine : {r['machine']}",
        f"model   : {r['model']}",
        f"texts   : {r['texts']}",
        f"median of {r['repeats']} interleaved repeats, wall s: "
        + ", ".join(f"{k} {v:.2f}" for k, v in med.items())
        + "; CPU s: " + ", ".join(f"{k} {v:.2f}" for k, v in med_cpu.items()),
        f"b/a collect / plain forward      = {r['ratio_collect_over_plain']:.3f} wall, "
        f"{r['cpu_ratio_collect_over_plain']:.3f} CPU   (target <= 1.10)",
        f"c/b naive / collect              = {r['ratio_naive_over_collect']:.2f} wall, "
        f"{r['cpu_ratio_naive_over_collect']:.2f} CPU   "
        f"(naive spends {100 * r['naive_accumulate_share']:.0f}% of its wall time in weight-sized accumulation)",
        f"naive vs |W|*stat max rel. error = {r['naive_max_relative_error']:.1e}",
        "peak RSS growth (untimed; plain/collect: 1 batch, naive: 1 sample): " + ", ".join(f"{k} {mib(v)}" for k, v in peak.items())
        + ("" if r["peak_rss_exact_allocator"] else "  (glibc mallopt unavailable: RSS may hide reuse)"),
        f"collect accumulator              = {mib(r['collect_accumulator_bytes'])} "
        f"({r['collect_accumulator_bytes'] / r['parameter_bytes']:.2e} x parameter bytes {mib(r['parameter_bytes'])})",
        f"naive accumulator                = {mib(r['naive_accumulator_bytes'])} "
        f"({r['naive_accumulator_bytes'] / r['parameter_bytes']:.2f} x parameter bytes)",
        f"mask on disk                     = {r['mask']['bytes']:,} bytes for {r['mask']['numel']:,} parameters "
        f"= {r['mask']['bits_per_param']:.4f} bits/parameter ({r['mask']['selected']:,} selected)",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-texts", type=int, default=16, help="texts per set (default 16)")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text (default 128)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--layers", type=int, default=14, help="decoder blocks (14 -> ~50M parameters)")
    parser.add_argument("--vocab", type=int, default=2048, help="BPE vocabulary size")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timed repeats (median)")
    parser.add_argument("--naive-texts", type=int, default=4,
                        help="texts the naive way runs on (its times are scaled to all texts by tokens)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on shared cores, 2 OpenMP threads mostly wait on each other)")
    parser.add_argument("--fraction", type=float, default=0.05, help="top-K fraction for the mask")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test): 8 texts, 2 layers")
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_texts, args.layers, args.repeats, args.max_length, args.naive_texts = 8, 2, 1, 64, 2
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    result = run(args)
    print(report(result))
    print(f"total wall time {time.perf_counter() - start:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
