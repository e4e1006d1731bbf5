"""Loading models: local folders, and the offline path of compute nodes without internet."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import tiny_llama

from mathneuro.models import OFFLINE_FLAGS, load_model


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
