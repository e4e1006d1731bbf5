"""What collecting a mixture-of-experts model costs, against plain forward passes.

Collection runs a model with experts one sample per pass, with transformers' eager experts and a
torch function mode that observes the experts' matrix products (mathneuro.collect). On a random
Mixtral (CPU, built from a config; texts are random token ids of varied lengths) this times,
interleaved over repeats (median reported):

(a) ``batched``  the decoder over right-padded batches, transformers' default experts;
(b) ``single``   the decoder one sample per pass, eager experts, no observation;
(c) ``collect``  ``mathneuro.collect_statistics`` (one sample per pass, observed).

It prints c/a (what a researcher pays against a plain batched pass) and c/b (the observation's
own overhead).

Run from the repository root:  .venv/bin/python benchmarks/bench_moe.py  [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import mathneuro
from mathneuro.collect import eager_experts


class _IdTokenizer:
    """Texts are space-separated token ids: the benchmark needs no vocabulary."""

    pad_token_id, eos_token_id = 0, 0

    def __call__(self, texts, add_special_tokens=True, verbose=False):
        return {"input_ids": [[int(t) for t in text.split()] for text in texts]}


def build(hidden: int, layers: int, experts: int, seed: int = 0):
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(seed)
    config = MixtralConfig(vocab_size=1000, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                           num_attention_heads=8, num_key_value_heads=4, num_local_experts=experts,
                           num_experts_per_tok=2, max_position_embeddings=1024)
    return MixtralForCausalLM(config).eval()


def texts(n: int, seed: int = 0) -> list[str]:
    rng = torch.Generator().manual_seed(seed)
    lengths = torch.randint(32, 160, (n,), generator=rng)
    return [" ".join(map(str, torch.randint(1, 1000, (int(n_tok),), generator=rng).tolist())) for n_tok in lengths]


def forward_passes(model, samples: list[str], batch_size: int) -> None:
    ids = _IdTokenizer()(samples)["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = [ids[i] for i in order[start : start + batch_size]]
            width = max(map(len, chunk))
            input_ids = torch.zeros((len(chunk), width), dtype=torch.long)
            attention = torch.zeros_like(input_ids)
            for row, seq in enumerate(chunk):
                input_ids[row, : len(seq)], attention[row, : len(seq)] = torch.tensor(seq), 1
            model.base_model(input_ids=input_ids, attention_mask=attention, use_cache=False)


def time_interleaved(methods: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    walls: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(repeats):
        for name, method in methods.items():
            start = time.perf_counter()
            method()
            walls[name].append(time.perf_counter() - start)
    return {name: statistics.median(w) for name, w in walls.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller model, fewer texts and repeats")
    args = parser.parse_args()
    hidden, layers, experts, n, repeats = (128, 2, 4, 16, 2) if args.quick else (256, 4, 8, 64, 3)
    model, samples = build(hidden, layers, experts), texts(n)

    def single():
        with eager_experts(model):
            forward_passes(model, samples, 1)

    methods = {
        "batched": lambda: forward_passes(model, samples, 8),
        "single": single,
        "collect": lambda: mathneuro.collect_statistics(model, _IdTokenizer(), samples, batch_size=8),
    }
    wall = time_interleaved(methods, repeats)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"Mixtral, {parameters / 1e6:.1f}M parameters ({layers} layers, {experts} experts, 2 per token), "
          f"{n} texts, {torch.get_num_threads()} threads, median of {repeats}")
    for name, seconds in wall.items():
        print(f"  {name:8s} {seconds:7.2f} s")
    print(f"  collect / batched = {wall['collect'] / wall['batched']:.2f}   "
          f"collect / single = {wall['collect'] / wall['single']:.2f}")


if __name__ == "__main__":
    main()
