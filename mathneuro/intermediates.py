"""The workflow's own files when they cannot be read: which rule remakes them, and what to do.

A statistics or mask file cut short (a full disk, a copy interrupted), or a table left empty,
would otherwise stop the job that reads it with a library's traceback (safetensors' "incomplete
metadata", pyarrow's "Parquet magic bytes not found"). :func:`read` turns that into
:class:`DamagedFile`: the file, the rule whose job writes it again, and that deleting it is all
it takes (Snakemake then remakes it, and reruns what reads it; nothing else is lost).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# results/<model>/<kind>/...: the rule that writes each kind of file (rules/common.smk's paths)
PRODUCERS = {
    "stats": "collect_activations", "topk": "top_k", "masks": "select_set", "counts": "select_set",
    "eval": "evaluate (evaluate_finetuned for a fine-tuning edit)", "consistency": "consistency", "topk_consistency": "topk_consistency",
    "subskill_overlap": "subskill_overlap", "snip": "snip_scores", "snip_topk": "snip_top_k",
    "agreement": "method_agreement", "finetuned": "finetune",
}
PLANTED = {"truth.safetensors": "plant_model", "random": "planted_random", "localization.parquet": "localization"}
TOP_LEVEL = {"tables": "aggregate", "tasks": "suite_tasks", "models": "the model's rule (shipped_toy_model, "
             "train_toy_model, plant_model, random_model or dequantize_gguf)", "data": "synthetic_data (or mmlu_records)",
             "bases": "train_plant_base"}


class DamagedFile(ValueError):
    """A file of the workflow's that cannot be read."""


def producer(path: str | Path, results: str = "results") -> str | None:
    """The rule that writes ``path`` (a file under ``results``), or None for any other file."""
    parts = Path(path).parts
    if results not in parts:
        return None
    below = parts[parts.index(results) + 1:]
    if below[:1] == ("tables",) and "plots" in below:
        return "plots"
    if below and below[0] in TOP_LEVEL:
        return TOP_LEVEL[below[0]]
    if len(below) >= 3 and below[1] == "planted":  # <model>/planted/: a planted model's own files
        return PLANTED.get(below[2])
    if len(below) >= 2 and below[1] in PRODUCERS:
        if below[1] == "eval" and len(below) > 2 and below[2] == "base":
            return "evaluate_base"
        if below[1] in ("finetuned", "eval") and len(below) > 3 and below[3] == "all":  # <model>/<kind>/<skill>/all/
            return "finetune_unedited" if below[1] == "finetuned" else "evaluate_finetuned_unedited"
        return PRODUCERS[below[1]]
    return None


def read(path: str | Path, reader: Callable[[str | Path], T]) -> T:
    """``reader(path)``; a file that exists but cannot be read raises :class:`DamagedFile`
    naming it and, for the workflow's files, the rule that remakes it."""
    try:
        return reader(path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, RuntimeError, json.JSONDecodeError) as err:
        raise DamagedFile(damaged(path, err)) from err
    except Exception as err:  # safetensors' SafetensorError and pyarrow's errors derive from Exception only
        if type(err).__module__.split(".")[0] not in ("safetensors", "safetensors_rust", "pyarrow"):
            raise
        raise DamagedFile(damaged(path, err)) from err


def damaged(path: str | Path, err: BaseException) -> str:
    rule = producer(path)
    then = (f"delete it and run Snakemake again: rule {rule} writes it anew, and nothing else is lost"
            if rule else "replace it")
    return f"{path} cannot be read ({type(err).__name__}: {err}); it is damaged or incomplete: {then}"
