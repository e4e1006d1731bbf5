"""GGUF checkpoints as model inputs (mathneuro.gguf): the architecture check on files written here
with the gguf package, and the dequantization of the real SmolLM2-135M-Instruct file that
ci/setup.sh fetches (ci/fetch_smollm2.sh): a missing file fails, it is never skipped."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO

from mathneuro.gguf import check_gguf, dequantize, read_header, supported_architectures

SMOLLM2 = REPO / "models" / "SmolLM2-135M-Instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def write_gguf(path, architecture: str) -> None:
    """A GGUF file with a header naming `architecture` and one small float32 tensor."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), architecture)
    writer.add_name("tiny")
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def smollm2() -> str:
    if not SMOLLM2.is_file():
        pytest.fail(f"{SMOLLM2} is missing: run `bash ci/fetch_smollm2.sh` (ci/setup.sh does)")
    return str(SMOLLM2)


def test_supported_architectures_are_transformers_own_causal_ones():
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    supported = supported_architectures()
    assert "llama" in supported and "qwen2" in supported
    assert set(supported) == set(GGUF_SUPPORTED_ARCHITECTURES) - {"general", "tokenizer", "t5", "umt5"}


def test_header_and_check_of_a_written_file(tmp_path):
    write_gguf(tmp_path / "tiny.gguf", "llama")
    header = read_header(tmp_path / "tiny.gguf")
    assert header["general.architecture"] == "llama" and header["general.name"] == "tiny"
    assert header["tensor_count"] == 1
    assert check_gguf(tmp_path / "tiny.gguf") == "llama"


def test_an_architecture_transformers_cannot_read_is_named_with_the_file(tmp_path):
    write_gguf(tmp_path / "rwkv.gguf", "rwkv6")
    with pytest.raises(ValueError, match=r"rwkv\.gguf.*'rwkv6'.*cannot read"):
        check_gguf(tmp_path / "rwkv.gguf")


def test_a_file_that_is_not_gguf_or_missing_fails_naming_it(tmp_path):
    (tmp_path / "bad.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(ValueError, match=r"bad\.gguf: not a readable GGUF file"):
        check_gguf(tmp_path / "bad.gguf")
    with pytest.raises(FileNotFoundError, match="absent.gguf"):
        check_gguf(tmp_path / "absent.gguf")


def test_the_workflow_refuses_an_unreadable_gguf_before_any_job(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    write_gguf(folder / "rwkv.gguf", "rwkv6")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["models"] = {"bad": {"path": str(folder), "gguf": "rwkv.gguf", "size_b": 0.001}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    run = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "-s", str(REPO / "Snakefile"),
                          "--directory", str(tmp_path), "--configfile", str(tmp_path / "c.yaml")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode != 0
    message = run.stdout + run.stderr
    assert "models.bad" in message and "rwkv.gguf" in message and "'rwkv6'" in message, message[-2000:]
    assert not (tmp_path / "results").exists()


@pytest.fixture(scope="module")
def dequantized(tmp_path_factory):
    out = tmp_path_factory.mktemp("smollm2") / "hf"
    summary = dequantize(str(SMOLLM2.parent), SMOLLM2.name, out, log=lambda *_: None) if SMOLLM2.is_file() else None
    return out, summary


def test_smollm2_dequantizes_to_a_plain_checkpoint_every_job_reads(dequantized):
    smollm2()
    out, summary = dequantized
    assert summary["architecture"] == "llama" and summary["class"] == "LlamaForCausalLM"
    assert summary["parameters"] == 134_515_008 and summary["tie_word_embeddings"] and summary["chat_template"]
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config  # a plain float checkpoint, not a GGUF-marked one
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    assert json.loads((out / "gguf_source.json").read_text())["file"] == SMOLLM2.name


def test_dequantized_weights_are_the_gguf_blocks_dequantized(dequantized):
    """Values against gguf's own dequantization of the file's quantized tensors, read one matrix at
    a time as the selection reads them (mathneuro.models.stored_weights)."""
    from gguf import GGUFReader, dequantize as gguf_dequantize

    from mathneuro.models import stored_weights

    reader = GGUFReader(smollm2())
    tensors = {t.name: t for t in reader.tensors}
    out, _ = dequantized
    pairs = {"model.layers.0.mlp.down_proj.weight": "blk.0.ffn_down.weight",
             "model.layers.29.mlp.up_proj.weight": "blk.29.ffn_up.weight",
             "model.layers.3.self_attn.v_proj.weight": "blk.3.attn_v.weight"}
    with stored_weights(str(out), list(pairs)) as read:
        for name, gguf_name in pairs.items():
            tensor = tensors[gguf_name]
            assert tensor.tensor_type.name == "Q4_1"
            expected = torch.from_numpy(gguf_dequantize(tensor.data, tensor.tensor_type).astype(np.float32))
            got = read(name)
            assert got.dtype == torch.float32 and torch.equal(got, expected.reshape(got.shape)), name


def test_the_dequantized_model_loads_and_writes_real_text(dequantized):
    from mathneuro.models import load_model

    out, _ = dequantized
    model, tokenizer = load_model(str(out), device="cpu")
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    generated = model.generate(**ids, max_new_tokens=12, do_sample=False)
    answer = tokenizer.decode(generated[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "Paris" in answer, answer
