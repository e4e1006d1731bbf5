"""Benchmark top-K selection and the math-minus-non-math difference at 1B-parameter scale.

Walks the weight matrices of a Llama-3.2-1B-shaped decoder (16 blocks of q/k/v/o and
gate/up/down: hidden 2048, MLP 8192, 8 KV heads of 64; ~0.97B parameters in target matrices)
one matrix at a time: it draws random weights and two random statistic vectors (math and
non-math, correlated like real ones), then times what MathNeuro does per matrix::

    mask = top_k(math) - top_k(non_math)        # mathneuro.top_k, scope "matrix" by default

and drops everything before the next matrix, so memory stays at one matrix's worth. Reports
throughput (parameters per second, weight generation excluded), and peak memory of one
selection vs one matrix's float32 scores, measured on the largest matrix in a separate pass.

Run from the repository root:  .venv/bin/python benchmarks/bench_select.py [--scale 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from torch import nn

import mathneuro
from memory import exact_rss_allocator, peak_rss_growth  # benchmarks/memory.py, beside this script
from mathneuro.collect import ActivationStats
from mathneuro.targets import Target

# Llama-3.2-1B: hidden 2048, intermediate 8192, 32 heads, 8 KV heads of dim 64, 16 blocks.
HIDDEN, MLP, KV, BLOCKS = 2048, 8192, 512, 16
BLOCK_SHAPES = {  # module name -> (out_features, in_features)
    "self_attn.q_proj": (HIDDEN, HIDDEN),
    "self_attn.k_proj": (KV, HIDDEN),
    "self_attn.v_proj": (KV, HIDDEN),
    "self_attn.o_proj": (HIDDEN, HIDDEN),
    "mlp.gate_proj": (MLP, HIDDEN),
    "mlp.up_proj": (MLP, HIDDEN),
    "mlp.down_proj": (HIDDEN, MLP),
}


def matrix_names(blocks: int) -> list[tuple[str, tuple[int, int]]]:
    """(module name, shape) of every target matrix of the first ``blocks`` blocks."""
    return [(f"model.layers.{b}.{kind}", shape) for b in range(blocks) for kind, shape in BLOCK_SHAPES.items()]


def random_matrix(name: str, shape: tuple[int, int], generator: torch.Generator) -> tuple[nn.Module, Target]:
    """An ``nn.Linear`` holding N(0, 0.02) weights, and its Target."""
    module = nn.Linear(shape[1], shape[0], bias=False)
    with torch.no_grad():
        module.weight.normal_(0.0, 0.02, generator=generator)
    holder = nn.Module()
    holder.add_module("layer", module)  # top_k needs a model only to find targets; we pass them
    return holder, Target(name=name, param_name=f"{name}.weight", module=module, transposed=False)


def random_stats(name: str, in_features: int, generator: torch.Generator) -> tuple[ActivationStats, ActivationStats]:
    """Math and non-math statistics sharing a heavy-tailed base (features differ by noise)."""
    base = torch.empty(in_features).log_normal_(0.0, 1.0, generator=generator)

    def one(tag: str) -> ActivationStats:
        noise = torch.empty(in_features).log_normal_(0.0, 0.5, generator=generator)
        return ActivationStats(stats={name: base * noise}, statistic="norm", n_samples=500,
                               n_tokens=0, n_truncated=0, metadata={"set": tag})

    return one("math"), one("non-math")


def select(holder: nn.Module, target: Target, math: ActivationStats, other: ActivationStats,
           fraction: float, scope: str, clock: dict[str, float]) -> int:
    """TopK(math) - TopK(non-math) for one matrix; adds wall seconds per step to ``clock``."""
    start, start_cpu = time.perf_counter(), time.process_time()
    math_mask = mathneuro.top_k(holder, math, fraction, scope=scope, targets=[target])
    middle = time.perf_counter()
    other_mask = mathneuro.top_k(holder, other, fraction, scope=scope, targets=[target])
    after = time.perf_counter()
    selected = (math_mask - other_mask).count()
    clock["top_k"] += after - start
    clock["difference"] += time.perf_counter() - after
    clock["first_top_k"] += middle - start
    clock["cpu"] += time.process_time() - start_cpu
    return selected


def walk(blocks: int, fraction: float, scope: str, seed: int) -> Iterator[tuple[str, int, int, dict]]:
    """Yield (name, numel, selected, clock) for every matrix, built and dropped one at a time."""
    generator = torch.Generator().manual_seed(seed)
    for name, shape in matrix_names(blocks):
        holder, target = random_matrix(name, shape, generator)
        math, other = random_stats(name, shape[1], generator)
        clock = {"top_k": 0.0, "difference": 0.0, "first_top_k": 0.0, "cpu": 0.0}
        selected = select(holder, target, math, other, fraction, scope, clock)
        yield name, target.weight.numel(), selected, clock


def memory_of_largest(fraction: float, scope: str, seed: int) -> dict[str, float]:
    """Peak RSS growth of one selection on the largest matrix, vs its float32 scores."""
    name, shape = max(matrix_names(1), key=lambda item: item[1][0] * item[1][1])
    holder, target = random_matrix(name, shape, torch.Generator().manual_seed(seed))
    math, other = random_stats(name, shape[1], torch.Generator().manual_seed(seed + 1))
    clock = {"top_k": 0.0, "difference": 0.0, "first_top_k": 0.0, "cpu": 0.0}
    exact = exact_rss_allocator()
    peak = peak_rss_growth(lambda: select(holder, target, math, other, fraction, scope, clock))
    scores = shape[0] * shape[1] * 4
    return {"matrix": f"{name} {shape[0]}x{shape[1]}", "scores_bytes": scores, "peak_bytes": peak,
            "peak_over_scores": peak / scores, "exact_allocator": exact}


def run(args: argparse.Namespace) -> dict:
    """Time the walk over all matrices, then measure memory on the largest one."""
    torch.set_num_threads(args.threads)
    blocks = max(1, round(BLOCKS * args.scale))
    total = {"top_k": 0.0, "difference": 0.0, "first_top_k": 0.0, "cpu": 0.0}
    numel = selected = 0
    start = time.perf_counter()
    for _, n, chosen, clock in walk(blocks, args.fraction, args.scope, args.seed):
        numel, selected = numel + n, selected + chosen
        for key in total:
            total[key] += clock[key]
    wall = time.perf_counter() - start
    seconds = total["top_k"] + total["difference"]
    return {
        "machine": f"{torch.get_num_threads()} torch thread(s), {os.cpu_count()} CPUs visible, "
                   f"load average {os.getloadavg()[0]:.1f}, torch {torch.__version__}",
        "blocks": blocks,
        "matrices": blocks * len(BLOCK_SHAPES),
        "parameters": numel,
        "fraction": args.fraction,
        "scope": args.scope,
        "selected_in_difference": selected,
        "seconds_select": seconds,
        "seconds_top_k": total["top_k"],
        "seconds_difference": total["difference"],
        "cpu_seconds_select": total["cpu"],
        "seconds_wall_including_generation": wall,
        "params_per_second_selection": numel / seconds,
        "params_per_second_one_top_k": numel / total["first_top_k"],
        "params_per_cpu_second_selection": numel / total["cpu"],
        "memory": memory_of_largest(args.fraction, args.scope, args.seed),
    }


def report(r: dict) -> str:
    """Human-readable summary of ``run``'s numbers."""
    mem = r["memory"]
    mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
    return "\n".join([
        f"machine   : {r['machine']}",
        f"matrices  : {r['matrices']} ({r['blocks']} Llama-3.2-1B blocks), {r['parameters'] / 1e9:.3f}B parameters",
        f"selection : top {r['fraction']:.0%} per {r['scope']} on math and on non-math, then the difference; "
        f"{r['selected_in_difference']:,} math-specific ({r['selected_in_difference'] / r['parameters']:.2%})",
        f"time      : {r['seconds_select']:.1f} s selection (top_k x2 {r['seconds_top_k']:.1f} s, difference "
        f"{r['seconds_difference']:.1f} s), {r['cpu_seconds_select']:.1f} CPU s; "
        f"{r['seconds_wall_including_generation']:.1f} s with weight generation",
        f"throughput: {r['params_per_second_selection'] / 1e6:.1f}M parameters/s for the whole step "
        f"(2x top_k + difference), {r['params_per_cpu_second_selection'] / 1e6:.1f}M per CPU second; "
        f"one top_k {r['params_per_second_one_top_k'] / 1e6:.1f}M parameters/s",
        f"memory    : peak RSS growth {mib(mem['peak_bytes'])} for one selection on {mem['matrix']} = "
        f"{mem['peak_over_scores']:.2f} x its float32 scores ({mib(mem['scores_bytes'])})"
        + ("" if mem["exact_allocator"] else "  (glibc mallopt unavailable: RSS may hide reuse)"),
    ])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="share of the 16 blocks to walk (default 1.0 = ~0.97B parameters; 0.25 = 4 blocks)")
    parser.add_argument("--fraction", type=float, default=0.05, help="top-K fraction (default 0.05)")
    parser.add_argument("--scope", choices=("matrix", "row"), default="matrix")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on shared cores, 2 OpenMP threads mostly wait on each other)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    if not 0 < args.scale <= 1:
        parser.error(f"--scale must be in (0, 1], got {args.scale}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    result = run(args)
    print(report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
