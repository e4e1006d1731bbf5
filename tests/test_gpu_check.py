"""benchmarks/gpu_check.py, the GPU acceptance run, in its CPU mode at tiny sizes (so that it cannot
rot), its checks, and the Llama 3.2 1B config fixture it builds the real-shaped model from."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

from conftest import REPO

SCRIPT = REPO / "benchmarks" / "gpu_check.py"
PHASES = ["forward", "collect", "select top 5%", "batch search", "generate", "total"]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("gpu_check", None)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """The documented CPU command, run once: (exit status, stdout, the --json rows)."""
    out = tmp_path_factory.mktemp("gpu_check") / "rows.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--cpu", "--tiny", "--json", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr, json.loads(out.read_text()) if out.is_file() else None


def test_cpu_tiny_mode_prints_every_phase_and_passes(cpu_run):
    returncode, output, result = cpu_run
    assert returncode == 0, output
    assert result["failures"] == []
    assert "PASS" in output
    assert sorted({r["phase"] for r in result["rows"]}) == sorted(PHASES)
    for line in ("phase", "select top 5%", "batch search", "generate", "total"):
        assert line in output
    dtypes = [r["dtype"] for r in result["rows"] if r["phase"] in ("forward", "collect")]
    assert dtypes == ["bf16", "bf16", "fp32", "fp32"]


def test_cpu_tiny_mode_values_are_sane(cpu_run):
    _, output, result = cpu_run
    rows = result["rows"]
    by_phase = {r["phase"]: r for r in rows}
    for r in rows:
        assert r["device"] == "cpu" and r["peak_bytes"] is None  # no GPU: peak memory is "-"
        if r["phase"] != "batch search":
            assert r["seconds"] > 0, r
    for r in rows:
        if r["phase"] in ("forward", "collect"):
            assert r["tokens_per_s"] > 0 and r["batch_size"] == 8
        if r["phase"] == "collect":
            assert r["vs_plain"] > 0
    # bf16 and fp32 activations on the same weights pick nearly the same top 5% (0.9997 measured)
    assert 0.9 <= by_phase["select top 5%"]["jaccard"] <= 1
    generate = by_phase["generate"]
    assert generate["batch_size"] == 64  # "auto" on the CPU: mathneuro.evaluate.AUTO_MAX_BATCH_SIZE
    assert generate["items_per_s"] > 0 and generate["tokens_per_s"] > 0
    assert by_phase["batch search"]["seconds"] is None and by_phase["batch search"]["batch_size"] == 64
    timed = sum(r["seconds"] for r in rows if r["phase"] != "total" and r["seconds"] is not None)
    assert by_phase["total"]["seconds"] >= timed  # the phases run one after another, inside the total


def test_batch_size_search_path_on_the_cpu(gpu_check):
    """The GPU's path: lm-eval's search for "auto" runs (timed on its own) and picks the batch size."""
    config = gpu_check.llama_config(tiny=True)
    tokenizer = gpu_check.build_tokenizer(config)
    model = gpu_check.build_model(config, "cpu", seed=0)
    sizes = gpu_check.dataclasses.replace(gpu_check.TINY_SIZES, items=3, prompt=(8, 12), max_gen_toks=4)
    search, generate = gpu_check.generation_phase(model, tokenizer, sizes, "cpu", seed=1, search=True)
    assert search["phase"] == "batch search" and search["seconds"] > 0
    assert search["batch_size"] == generate["batch_size"] == 64  # nothing runs out of memory on the CPU
    assert "auto at" in search["note"]
    assert generate["items_per_s"] > 0 and generate["tokens_per_s"] > 0


def test_checks_fail_on_bad_rows(gpu_check, cpu_run):
    rows = cpu_run[2]["rows"]
    assert gpu_check.failures(rows, 0.9, 240) == []
    problems = gpu_check.failures(rows, 1.01, 1e-3)
    assert any("Jaccard" in p for p in problems) and any("limit" in p for p in problems)
    broken = [r | {"tokens_per_s": 0.0, "batch_size": None} if r["phase"] == "generate" else r for r in rows]
    problems = gpu_check.failures(broken, 0.9, 240)
    assert any("no tokens" in p for p in problems) and any("no batch size" in p for p in problems)
    zero = [r | {"seconds": 0.0} if r["phase"] == "collect" else r for r in rows]
    assert any("collect" in p for p in gpu_check.failures(zero, 0.9, 240))


def test_fixture_is_llama_3_2_1b(gpu_check):
    """The fixture builds Llama 3.2 1B's shape (on the meta device: no memory, no weights)."""
    from transformers import AutoModelForCausalLM

    from mathneuro.targets import find_targets

    config = gpu_check.llama_config(tiny=False)
    assert (config.hidden_size, config.intermediate_size, config.num_hidden_layers) == (2048, 8192, 16)
    assert config.rope_parameters["rope_type"] == "llama3" and config.tie_word_embeddings
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    assert sum(p.numel() for p in model.parameters()) == 1_235_814_400
    targets = find_targets(model)
    assert (len(targets), sum(t.weight.numel() for t in targets)) == (112, 973_078_528)


def test_tokenizer_covers_the_vocabulary_with_llama_3_specials(gpu_check):
    config = gpu_check.llama_config(tiny=False)
    tokenizer = gpu_check.build_tokenizer(config)
    assert len(tokenizer) == config.vocab_size == 128_256
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id) == (128_000, 128_009, 128_004)
    text = gpu_check.random_texts(tokenizer, 1, (50, 60), seed=0)[0]
    ids = tokenizer(text)["input_ids"]
    assert ids[0] == 128_000 and 50 <= len(ids) - 1 <= 60 and tokenizer.decode(ids[1:]) == text
    tiny = gpu_check.llama_config(tiny=True)
    assert (tiny.vocab_size, tiny.bos_token_id, tiny.eos_token_id) == (1024, 768, [769, 776, 777])
