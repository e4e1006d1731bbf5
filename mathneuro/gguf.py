"""GGUF checkpoints (llama.cpp's format) as model inputs: dequantized once to a Hugging Face folder.

A model spec names a GGUF file (``gguf:``) inside ``path``, a local folder or a hub repository.
The workflow dequantizes it once per model (rule ``dequantize_gguf``) into
``results/models/<label>``, a checkpoint with safetensors, which every later job reads as it reads
any local checkpoint: collection, evaluation, the selection's one-matrix-at-a-time reads
(``models.stored_weights``) and export. Nothing reads the GGUF file again.

Whether transformers can read the file is decided by the file's header alone
(``general.architecture``) against transformers' own list of GGUF architectures, so a config
naming an unreadable one fails before any job, naming the file and the architecture.
"""

from __future__ import annotations

import json
from pathlib import Path

# llama.cpp's architecture names that transformers reads under another name
# (transformers.modeling_gguf_pytorch_utils.load_gguf_checkpoint does the same renames).
RENAMES = {"qwen2moe": "qwen2_moe", "gpt-oss": "gpt_oss", "qwen3moe": "qwen3_moe",
           "minimax-m2": "minimax_m2", "t5encoder": "t5"}

# Keys of transformers' GGUF config mapping that are no architecture, and the encoder-decoder ones:
# the workflow loads AutoModelForCausalLM.
NOT_CAUSAL = ("general", "tokenizer", "t5", "t5encoder", "umt5")


def supported_architectures() -> list[str]:
    """The GGUF architectures the installed transformers can dequantize into a causal LM.

    transformers' ``GGUF_SUPPORTED_ARCHITECTURES`` (modeling_gguf_pytorch_utils) is the key list of
    ``integrations.ggml.GGUF_CONFIG_MAPPING``; read here from the latter, which imports in under a
    second without torch, since the workflow checks every GGUF model when it parses the config.
    """
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING

    return sorted(a for a in GGUF_CONFIG_MAPPING if a not in NOT_CAUSAL)


_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


def read_header(file: str | Path) -> dict:
    """The GGUF file's ``general.*`` metadata (architecture, name, ...), its format version and
    tensor count, read from the header alone (the gguf package's reader maps every tensor first,
    seconds for a 100 MB file; the workflow checks GGUF models whenever it parses the config).

    GGUF (llama.cpp's ``docs/gguf.md``): magic ``GGUF``, version (u32), tensor count and key-value
    count (u64), then each key (u64 length, UTF-8) with a u32 value type and its value; all
    little-endian. Arrays are skipped.
    """
    import struct

    file = Path(file)
    if not file.is_file():
        raise FileNotFoundError(f"GGUF file {str(file)!r} does not exist")
    with file.open("rb") as f:
        def read(fmt: str):
            size = struct.calcsize("<" + fmt)
            data = f.read(size)
            if len(data) != size:
                raise ValueError(f"{file}: not a readable GGUF file (the header ends early)")
            return struct.unpack("<" + fmt, data)[0]

        def string() -> str:
            return f.read(read("Q")).decode("utf-8", errors="replace")

        def value(kind: int):
            if kind in _SCALARS:
                return read(_SCALARS[kind])
            if kind == _STRING:
                return string()
            if kind == _ARRAY:
                item, count = read("I"), read("Q")
                for _ in range(count):
                    value(item)
                return None
            raise ValueError(f"{file}: not a readable GGUF file (value type {kind})")

        if f.read(4) != b"GGUF":
            raise ValueError(f"{file}: not a readable GGUF file (no GGUF magic)")
        header = {"version": read("I"), "tensor_count": read("Q")}
        for _ in range(read("Q")):
            key = string()
            found = value(read("I"))
            if key.startswith("general.") and found is not None:
                header[key] = found
    return header


def check_gguf(file: str | Path) -> str:
    """The file's architecture; ValueError naming the file and the architecture when transformers
    cannot read it (or it has none)."""
    header = read_header(file)
    architecture = header.get("general.architecture")
    if not architecture:
        raise ValueError(f"GGUF file {str(file)!r} names no general.architecture")
    supported = supported_architectures()
    if architecture not in supported and RENAMES.get(architecture) not in supported:
        raise ValueError(
            f"GGUF file {str(file)!r} holds a {architecture!r} model, which the installed transformers "
            f"cannot read as a causal LM; it reads GGUF architectures {supported}"
        )
    return architecture


def local_file(path: str, file: str) -> Path | None:
    """``path/file`` when ``path`` is a local folder; None for a hub repository."""
    return Path(path) / file if Path(path).is_dir() else None


def gguf_file(path: str, file: str, *, revision: str | None = None, offline: bool = False) -> Path:
    """The local GGUF file: ``path/file`` for a local folder, else downloaded from (or found in the
    cache of) hub repository ``path``."""
    if (local := local_file(path, file)) is not None:
        return local
    from huggingface_hub import hf_hub_download

    from mathneuro.hub import is_offline

    return Path(hf_hub_download(path, file, revision=revision, local_files_only=offline or is_offline()))


def dequantize(path: str, file: str, out: str | Path, *, revision: str | None = None,
               offline: bool = False, log=print) -> dict:
    """Dequantize GGUF ``file`` of ``path`` (folder or hub repo) into the Hugging Face folder ``out``:
    config, tokenizer (with its chat template) and float32 safetensors. Returns what it wrote
    (also in ``out/gguf_source.json``).

    float32 holds every dequantized value exactly (GGUF's block scales are float16), so a model's
    ``dtype`` is applied when a job loads the folder, as for any checkpoint.
    """
    import torch

    from mathneuro.hub import go_offline
    from mathneuro.models import lean_transformers

    if offline:
        go_offline()
    local = gguf_file(path, file, revision=revision, offline=offline)
    architecture = check_gguf(local)
    log(f"{local}: GGUF architecture {architecture!r}; dequantizing")
    lean_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(local.parent), local.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The weights are plain float tensors now; only the GGUF marker keeps save_pretrained from
    # writing them (transformers 5: "quantized with gguf and is not serializable").
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    summary = {
        "path": path, "file": file, "revision": revision, "architecture": architecture,
        "model_type": model.config.model_type, "class": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "tie_word_embeddings": bool(getattr(model.config, "tie_word_embeddings", False)),
        "chat_template": tokenizer.chat_template is not None,
    }
    (out / "gguf_source.json").write_text(json.dumps(summary, indent=1))
    log(f"wrote {out}: {summary}")
    return summary
