"""What training only a set's entries costs against training every parameter (mathneuro.finetune).

On the same model, texts and steps, side by side in one run, it measures the peak RSS growth and
the time of:

(a) ``all``  every parameter trained with AdamW: gradients for every weight, two moments each;
(b) ``set``  only a set's entries (a random set of ``--share`` of every target matrix, as large as
             a MathNeuro set at K = 5%): gradients and AdamW's moments for those entries alone,
             every other weight frozen;

each in a fresh copy of the model, and prints b/a. The optimizer's state is also counted
directly (bytes of its tensors), which does not depend on the allocator.

Models: ``toy`` (results/models/toy: run the default first), ``smollm2`` (SmolLM2-135M-Instruct
dequantized from models/ into a temporary folder), or a local Hugging Face folder.

Run from the repository root:  .venv/bin/python benchmarks/bench_finetune.py --model toy [--model smollm2]
"""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from bench_snip import measure_each_model, model_folder, model_parser, texts  # benchmarks/bench_snip.py, beside this script
from memory import exact_rss_allocator, peak_rss_growth
from mathneuro import training
from mathneuro.finetune import finetune
from mathneuro.masks import ParameterMask
from mathneuro.models import load_model
from mathneuro.targets import find_targets


def random_set(model, share: float, seed: int = 0) -> ParameterMask:
    generator = torch.Generator().manual_seed(seed)
    return ParameterMask({t.param_name: torch.rand(t.parameter.shape, generator=generator) < share
                          for t in find_targets(model)})


def measure(name: str, args: argparse.Namespace, scratch: Path) -> None:
    model, tokenizer = load_model(str(model_folder(name, scratch)), dtype="float32", device="cpu")
    mask = random_set(model, args.share)
    corpus = texts(args.steps * args.batch_size)
    run = {"steps": args.steps, "batch_size": args.batch_size, "lr": 1e-4, "max_length": args.max_length,
           "weight_decay": 0.01, "seed": 0, "warmup": 0}
    state_bytes = {}
    real = training.make_optimizer

    def counting(*a, **k):
        optimizer = real(*a, **k)
        original = optimizer.step

        def step(*sa, **sk):
            result = original(*sa, **sk)
            state_bytes[current] = sum(t.numel() * t.element_size() for s in optimizer.state.values()
                                       for t in s.values() if torch.is_tensor(t))
            return result
        optimizer.step = step
        return optimizer

    training.make_optimizer = counting
    exact_rss_allocator()
    results = {}
    for current, chosen in (("all", None), ("set", mask)):
        copy_of = copy.deepcopy(model)
        start = time.perf_counter()
        growth = peak_rss_growth(lambda: finetune(copy_of, tokenizer, corpus, chosen, log=lambda _: None, **run))
        results[current] = (growth, time.perf_counter() - start)
        del copy_of
    training.make_optimizer = real
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{name}: {parameters / 1e6:.1f}M parameters; set: {mask.count():,} entries ({100 * args.share:g}% of every "
          f"target matrix); {args.steps} steps of {args.batch_size} texts of at most {args.max_length} tokens")
    print("| trained | peak RSS growth | optimizer state | time |")
    print("|---|---|---|---|")
    for key, (growth, seconds) in results.items():
        print(f"| {key} | {growth / 2**20:.0f} MiB | {state_bytes.get(key, 0) / 2**20:.1f} MiB | {seconds:.1f} s |")
    print(f"set / all: peak memory {results['set'][0] / max(1, results['all'][0]):.2f}x, optimizer state "
          f"{state_bytes.get('set', 0) / max(1, state_bytes.get('all', 1)):.3f}x, time "
          f"{results['set'][1] / results['all'][1]:.2f}x")


def main(argv: Sequence[str] | None = None) -> None:
    parser = model_parser(__doc__)
    parser.add_argument("--share", type=float, default=0.0145, help="the set's share of each matrix (the toy's K = 5%% set)")
    parser.add_argument("--steps", type=int, default=20)
    measure_each_model(parser.parse_args(argv), measure)


if __name__ == "__main__":
    main()
