"""Loading models: local folders, and the offline path of compute nodes without internet."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from conftest import REPO, tiny_llama

from mathneuro.hub import OFFLINE_FLAGS
from mathneuro.models import load_model


@pytest.fixture
def offline_env(monkeypatch, tmp_path):
    for flag in OFFLINE_FLAGS:
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-cache"))  # an empty cache


def test_local_checkpoint_loads_with_pad_token_and_dtype(tmp_path, tokenizer):
    tiny_llama(len(tokenizer)).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    model, loaded = load_model(str(tmp_path / "model"), dtype="bfloat16", device="cpu")
    assert next(model.parameters()).dtype == torch.bfloat16 and not model.training
    assert loaded.pad_token is not None


def test_offline_model_missing_from_cache_names_it(offline_env):
    with pytest.raises(OSError, match=r"(?s)meta-llama/not-in-the-cache.*offline.*prefetch"):
        load_model("meta-llama/not-in-the-cache", offline=True)
    assert all(os.environ[flag] == "1" for flag in OFFLINE_FLAGS)


def test_unknown_dtype_is_rejected_before_loading():
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        load_model("anything", dtype="float8")


def test_a_fresh_job_loads_and_runs_a_model_without_sklearn_scipy_or_hub_kernels(tmp_path, tokenizer):
    """What a workflow job does: load a checkpoint and run it, in a new interpreter; no layer's
    forward is replaced (hub kernels), none of the three libraries imported."""
    tiny_llama(len(tokenizer)).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    job = (
        "import sys, torch\n"
        "from mathneuro.models import load_model\n"
        f"model, tokenizer = load_model({str(tmp_path / 'model')!r}, device='cpu')\n"
        "ids = tokenizer(['12+3'], return_tensors='pt').input_ids\n"
        "out = model.generate(ids, max_new_tokens=3, do_sample=False)\n"
        "assert out.shape == (1, ids.shape[1] + 3), out.shape\n"
        "assert not model.use_kernels and all('kernels' not in type(m).forward.__module__ for m in model.modules())\n"
        "print(sorted(m for m in ('sklearn', 'scipy', 'kernels') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", job], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
