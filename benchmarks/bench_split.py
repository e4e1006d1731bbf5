"""The selection stage split into one job per (data set, K) and per (control, K), against the
former single job per (n, seed) that loaded the model once and looped over every K.

The split lets a new K (or control, or seed) add jobs without rerunning finished ones; its price is
a job start-up and a weight read per (data set, K) instead of one model load. This script measures,
side by side on this machine, on a randomly initialised Llama-3.2-1B checkpoint written in bf16:

* job start-up, fresh interpreters, median of 3: a former selection job (torch + transformers'
  model class + mathneuro), a `top_k` job (torch + safetensors + mathneuro, no transformers) and a
  `difference` job;
* the former job's model load (`load_weights`) and one `top_k` over its in-memory weights;
* one `top_k` whose weights are read from the checkpoint one matrix at a time (today's job);
* the difference and the random baseline, saved, from masks in memory (the former job) and read
  from disk (a `difference` job).

and prints the whole stage for the paper's grid (3 data sets, 2 controls, 8 K) both ways and
their ratio. The 8B line scales the measured per-parameter costs to Llama-3.1-8B's target
matrices (6.98B parameters; 16.1 GB of bf16 weights): an estimate, not a measurement.

Run from the repository root:  .venv/bin/python benchmarks/bench_split.py [--blocks 16]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import torch

SETS, CONTROLS, KS = 3, 2, 8  # the paper: GSM8K, RACE, MMLU; K in 0.01% ... 15%
TARGETS_8B, BYTES_8B = 6.98e9, 16.06e9  # Llama-3.1-8B: target-matrix parameters, bf16 weight bytes

IMPORTS = {
    "former select job": "from mathneuro.models import load_weights, lean_transformers; lean_transformers(); "
                         "import transformers.models.llama.modeling_llama; import mathneuro.select, mathneuro.tables",
    "top_k job": "import safetensors.torch, mathneuro.models, mathneuro.select, mathneuro.targets, mathneuro.tables",
    "difference job": "import mathneuro.masks, mathneuro.select, mathneuro.tables",
}


def startup(code: str, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_checkpoint(folder: Path, blocks: int) -> None:
    """Llama-3.2-1B's shapes (the first ``blocks`` of 16 blocks), random weights, saved in bf16."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=blocks,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True,
                         torch_dtype="bfloat16")
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model = model.to_empty(device="cpu").to(torch.bfloat16)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    model.save_pretrained(folder, safe_serialization=True)
    from mathneuro.toy import build_tokenizer  # the former job loads a tokenizer with the model

    build_tokenizer(["a few words of text"], vocab_size=300).save_pretrained(folder)


def statistics_for(model) -> object:
    """Activation statistics shaped like a real collection's (log-normal per input feature)."""
    from mathneuro import find_targets
    from mathneuro.collect import ActivationStats

    targets = find_targets(model)
    generator = torch.Generator().manual_seed(0)
    stats = {t.name: torch.empty(t.in_features).log_normal_(0.0, 1.0, generator=generator) for t in targets}
    layout = {t.name: {"param": t.param_name, "transposed": t.transposed} for t in targets}
    return ActivationStats(stats=stats, statistic="norm", n_samples=500, n_tokens=0, n_truncated=0, layout=layout)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run(blocks: int) -> dict[str, float]:
    from mathneuro import ParameterMask, random_like, specific, top_k
    from mathneuro.models import load_weights, stored_weights
    from mathneuro.targets import stored_targets

    torch.set_num_threads(1)
    found = {name: startup(code) for name, code in IMPORTS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "model")
        write_checkpoint(folder, blocks)
        found["checkpoint bytes"] = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
        (model, _), found["former model load"] = timed(lambda: load_weights(str(folder), dtype="bfloat16"))
        stats = statistics_for(model)
        mask, found["top_k, weights in memory"] = timed(lambda: top_k(model, stats, 0.05))
        found["target parameters"] = mask.numel()
        del model
        names = [info["param"] for info in stats.layout.values()]

        def from_checkpoint():
            with ExitStack() as stack:
                read = stack.enter_context(stored_weights(str(folder), names, dtype="bfloat16"))
                return top_k(None, stats, 0.05, targets=stored_targets(stats.layout, read))

        stored, found["top_k, weights read from the checkpoint"] = timed(from_checkpoint)
        assert stored == mask, "reading weights from the checkpoint changed the selection"
        mask.save(Path(tmp, "a.safetensors"))
        ParameterMask(dict(mask), {}).save(Path(tmp, "b.safetensors"))

        def difference(skill, control):
            chosen = specific(skill, control)
            random_like(chosen, seed=0).save(Path(tmp, "r.safetensors"))
            chosen.save(Path(tmp, "m.safetensors"))

        other = ParameterMask(dict(stored), {})
        _, found["difference, masks in memory"] = timed(lambda: difference(mask, other))
        _, found["difference, masks read from disk"] = timed(
            lambda: difference(ParameterMask.load(Path(tmp, "a.safetensors")), ParameterMask.load(Path(tmp, "b.safetensors"))))
    return found


def stage(t: dict[str, float], scale: float) -> tuple[float, float]:
    """Seconds of the whole selection stage (3 sets x 8 K tops, 2 controls x 8 K differences) both
    ways, with per-parameter costs scaled by ``scale`` (1 = as measured)."""
    in_memory = t["top_k, weights in memory"] * scale
    from_disk = t["top_k, weights read from the checkpoint"] * scale
    load = t["former model load"] * (1.0 if scale == 1 else BYTES_8B / t["checkpoint bytes"])
    diff_memory = t["difference, masks in memory"] * scale
    diff_disk = t["difference, masks read from disk"] * scale
    former = t["former select job"] + load + SETS * KS * in_memory + CONTROLS * KS * diff_memory
    split = SETS * KS * (t["top_k job"] + from_disk) + CONTROLS * KS * (t["difference job"] + diff_disk)
    return former, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=16, help="Llama-3.2-1B blocks to build (default all 16)")
    args = parser.parse_args()
    t = run(args.blocks)
    for name, value in t.items():
        print(f"{name:42s} {value:14.2f}" + ("" if name in ("target parameters", "checkpoint bytes") else " s"))
    for label, scale in (("as measured", 1.0), ("8B (scaled)", TARGETS_8B / t["target parameters"])):
        former, split = stage(t, scale)
        print(f"selection stage {label:14s}: former {former:8.0f} s, split {split:8.0f} s, split/former {split / former:.3f}")


if __name__ == "__main__":
    main()
