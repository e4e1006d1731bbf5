"""Load a causal LM and its tokenizer from a local folder or the Hugging Face hub.

On compute nodes without internet (``HF_HUB_OFFLINE=1``) a model missing from the cache fails
with a message naming the model and how to prefetch it, not with a network stack trace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import torch

from mathneuro.hub import go_offline, is_offline

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


# transformers' availability checks for optional libraries that it imports with every model class
# when they are installed, for features MathNeuro never uses: scikit-learn (lm-eval installs it)
# for assisted decoding's confidence threshold, SciPy for object-detection losses, and `kernels`
# (a transformers requirement) for hub kernels, which replace layers' forwards with code fetched
# from the hub (see load_model).
UNUSED_BACKENDS = ("is_sklearn_available", "is_scipy_available", "is_kernels_available")


def lean_transformers() -> None:
    """Keep transformers from importing scikit-learn, SciPy and `kernels` along with its model classes.

    Every short workflow job would pay those imports (``benchmarks/bench_startup.py`` times it),
    for assisted decoding, object detection and hub kernels. Only transformers' availability checks
    change, so call this before its modeling code is first imported; the libraries stay
    importable, and lm-eval metrics that need scikit-learn import it themselves.
    """
    import transformers.utils as utils
    import transformers.utils.import_utils as backends

    os.environ["USE_HUB_KERNELS"] = "NO"  # every later from_pretrained loads without them

    def unavailable() -> bool:
        return False

    for check in UNUSED_BACKENDS:  # modeling code imports the checks by name from either module
        for module in (backends, utils):
            if hasattr(module, check):
                setattr(module, check, unavailable)


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_model(
    path: str,
    *,
    dtype: str = "float32",
    device: str = "auto",
    device_map: str | None = None,
    revision: str | None = None,
    offline: bool = False,
    gpus: int = 0,
):
    """(model, tokenizer) in eval mode. ``device_map="auto"`` spreads a large model over GPUs.

    ``offline=True`` sets the Hugging Face offline flags first (compute nodes without internet).
    ``gpus`` (the job's GPUs): unless ``device`` is ``cpu``, claim that many of this machine's
    GPUs when no scheduler assigned any (``devices.claim_gpus``), and stop before loading if no
    CUDA device is visible (``devices.require_gpus``).
    """
    if gpus and device != "cpu":
        from mathneuro.devices import claim_gpus, require_gpus

        claim_gpus(gpus)
        require_gpus(gpus, device, path)
    if offline:
        go_offline()
    lean_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {sorted(DTYPES)}")
    local = Path(path).is_dir()
    kwargs = {"revision": revision, "local_files_only": local or is_offline()}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        # use_kernels=False: the model computes as its modeling code says. transformers 5 would
        # otherwise swap in hub kernels (fetched from the hub, fused on a GPU), whose layers need not
        # call the nn.Linear modules whose inputs the statistics hooks read.
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=DTYPES[dtype], device_map=device_map, use_kernels=False, **kwargs
        )
    except OSError as err:
        where = "the local folder" if local else "the Hugging Face cache (offline mode)" if is_offline() else "the hub"
        raise OSError(
            f"cannot load model {path!r} from {where}: {err}. On an offline node, prefetch it first "
            "on a machine with internet (snakemake prefetch, see docs/real-models.md)."
        ) from err
    if device_map is None:
        model.to(resolve_device(device))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.eval(), tokenizer


def placement(gpus: int) -> dict[str, Any]:
    """``load_model``'s arguments for a job given ``gpus`` GPUs (its ``gpu`` resource): claim
    them, and spread the model over them (``device_map="auto"``) when there are several."""
    return {"gpus": int(gpus), "device_map": "auto" if gpus > 1 else None}


def load_weights(path: str, **kwargs):
    """(model, tokenizer) on the CPU, whatever device the config names: for jobs that only read
    or edit weights (selection, LAPE, export), never run the model on an accelerator."""
    return load_model(path, **{**kwargs, "device": "cpu", "device_map": None, "gpus": 0})


def checkpoint_folder(path: str, *, revision: str | None = None, offline: bool = False) -> Path:
    """The local folder holding a model's files: ``path`` itself, or its snapshot in the HF cache."""
    if Path(path).is_dir():
        return Path(path)
    from huggingface_hub import snapshot_download

    patterns = ["*.safetensors", "*.safetensors.index.json", "config.json"]
    return Path(snapshot_download(path, revision=revision, local_files_only=offline or is_offline(),
                                  allow_patterns=patterns))


@contextmanager
def stored_weights(path: str, names: Iterable[str], *, dtype: str = "float32", revision: str | None = None,
                   offline: bool = False, **_) -> Iterator[Callable[[str], torch.Tensor]]:
    """``read(name)``: the parameter ``name`` read from the model's safetensors files, as ``dtype``
    (what ``load_model`` would hold), one tensor per call: the model is never built.

    Raises LookupError when the checkpoint is not in safetensors or lacks one of ``names`` (some
    checkpoints store weights under other names than the model's parameters): load the model then.
    Extra keyword arguments (a job's model settings: device, device_map) are ignored.
    """
    from safetensors import safe_open

    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {sorted(DTYPES)}")
    files = sorted(checkpoint_folder(path, revision=revision, offline=offline).glob("*.safetensors"))
    if not files:
        raise LookupError(f"{path}: no safetensors files")
    with ExitStack() as stack:
        handles = [stack.enter_context(safe_open(str(f), framework="pt")) for f in files]
        where = {key: handle for handle in handles for key in handle.keys()}
        missing = [name for name in names if name not in where]
        if missing:
            raise LookupError(f"{path}: the checkpoint has no tensor(s) {missing[:3]}")
        yield lambda name: where[name].get_tensor(name).to(DTYPES[dtype])
