"""Evaluation through lm-eval's own machinery (no hand-written scorer).

``evaluate`` runs ``lm_eval.simple_evaluate`` on an in-memory model and returns a tidy DataFrame.
Tasks are named as lm-eval names them: its own (``gsm8k_cot``, ``mmlu``...), the project's
(``mathneuro/lm_tasks``: the toy's ``toy_math``..., EGSM), each suite's written by
``mathneuro.tasks.write_suite``; only the bits-per-byte tasks (``bpb_<data set>``) are written
here, from the config's data sets (``write_bpb_tasks``).

lm-eval is imported inside the functions only: importing it costs seconds, which matters for
short workflow jobs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import yaml

from mathneuro.data import split_names

COLUMNS = ["task", "metric", "value", "stderr", "n"]


def _dataset_fields(name: str, data_path: str | Path) -> dict[str, Any]:
    """A task reading its test split from JSON-lines file ``data_path``."""
    path = Path(data_path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"data file for {name} not found: {path}")
    return {"task": name, "dataset_path": "json",
            "dataset_kwargs": {"data_files": {"test": str(path)}}, "test_split": "test"}


BPB_PREFIX = "bpb_"


def is_bpb_task(task: str) -> bool:
    """``bpb_<data set>``: bits per byte of a data set's held-out texts (``bpb_task_config``)."""
    return task.startswith(BPB_PREFIX)


def is_generated_task(task: str) -> bool:
    """Tasks whose YAML the workflow writes from the config (``bpb_<data set>``); every other task
    name is lm-eval's or the project's (``mathneuro.tasks``)."""
    return is_bpb_task(task)


def heldout_spec(spec: Mapping[str, Any], split: str) -> dict:
    """The data set spec of ``spec``'s held-out texts, every record in order: hub and synthetic
    specs read ``split`` instead of their identification split (ValueError if the two share a
    split: ``"train+test"`` against ``"train"`` too); file specs are read as they are."""
    held = {key: value for key, value in spec.items() if key not in ("n", "seed", "replace")}
    if spec["source"] in ("hf", "synthetic"):
        identification = str(spec.get("split") or "train")
        shared = sorted(set(split_names(split)) & set(split_names(identification)))
        if shared:
            raise ValueError(f"held-out split {split!r} reads {', '.join(shared)}, as the data set's "
                             f"identification split ({spec.get('split')!r}) does: its bits per byte "
                             "would be measured on the texts the sets were found on")
        held["split"] = split
    return held


def bpb_task_config(name: str, data_path: str | Path) -> dict:
    """lm-eval task: the rolling log-likelihood of each text (``loglikelihood_rolling``, the whole
    text scored, as Wanda and LAPE measure perplexity per corpus), metric ``bits_per_byte``
    (lower is better). Records hold ``text``."""
    return {
        **_dataset_fields(name, data_path),
        "output_type": "loglikelihood_rolling",
        "doc_to_text": "",
        "doc_to_target": "{{text}}",
        "metric_list": [{"metric": "bits_per_byte", "aggregation": "bits_per_byte", "higher_is_better": False}],
        "metadata": {"version": 1.0},
    }


def write_bpb_tasks(specs: Mapping[str, Mapping[str, Any]], out_dir: str | Path, *, split: str = "test",
                    local_data: Mapping[str, Any] | None = None, seed: int = 0) -> dict[str, int]:
    """For each data set label -> spec, ``{out_dir}/bpb_<label>.yaml`` and its texts
    ``bpb_<label>.jsonl``: the spec's held-out records (``heldout_spec``) rendered in its template,
    in an order shuffled under ``seed`` (so a suite's ``limit`` takes a sample across MMLU's
    subjects rather than the first subject). Returns the number of texts per task."""
    import random

    from mathneuro.data import load_texts

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for label, spec in specs.items():
        name = f"{BPB_PREFIX}{label}"
        texts = list(load_texts(heldout_spec(spec, split), local_data=local_data))
        random.Random(seed).shuffle(texts)
        data = out_dir / f"{name}.jsonl"
        data.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
        (out_dir / f"{name}.yaml").write_text(yaml.safe_dump(bpb_task_config(name, data), sort_keys=False),
                                              encoding="utf-8")
        counts[name] = len(texts)
    return counts


def _finite(value: Any) -> float:
    """``float(value)``, with lm-eval's ``"N/A"`` and non-numbers mapped to NaN."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def results_frame(results: Mapping[str, Any]):
    """Tidy ``task, metric, value, stderr, n`` rows from a ``simple_evaluate`` result.

    ``metric`` is lm-eval's ``name,filter`` key (e.g. ``acc,none``,
    ``exact_match,strict-match``); ``n`` is the number of documents evaluated.
    """
    import pandas as pd

    rows = []
    n_samples = results.get("n-samples", {})
    for task, metrics in results["results"].items():
        n = n_samples.get(task, {}).get("effective")
        for key, value in metrics.items():
            name, _, filt = key.partition(",")
            if key == "alias" or name.endswith("_stderr") or not filt:
                continue
            stderr = metrics.get(f"{name}_stderr,{filt}")
            rows.append({"task": task, "metric": key, "value": _finite(value),
                         "stderr": _finite(stderr), "n": n})
    return pd.DataFrame(rows, columns=COLUMNS)


def _include(include_path) -> str | list[str] | None:
    """lm-eval's ``include_path``: one folder, several, or none."""
    if include_path is None or isinstance(include_path, (str, Path)):
        return None if include_path is None else str(include_path)
    return [str(p) for p in include_path] or None


def task_manager(tasks: list[str], include_path=None):
    """An lm-eval ``TaskManager`` that knows ``tasks``, indexing as little as possible.

    Indexing lm-eval's built-in task folder takes tens of seconds on a busy CPU, so when
    every task is found under ``include_path`` alone the built-ins are not indexed.
    Raises ``ValueError`` naming the tasks that no folder defines.
    """
    from lm_eval.tasks import TaskManager

    include_path = _include(include_path)
    if include_path is not None:
        local = TaskManager(include_path=include_path, include_defaults=False)
        if all(t in local.all_tasks for t in tasks):
            return local
    manager = TaskManager(include_path=include_path)
    unknown = [t for t in tasks if t not in manager.all_tasks]
    if unknown:
        raise ValueError(f"unknown lm-eval tasks {unknown}; for the project's tasks (the toy's...) pass "
                         "include_path= a suite folder (mathneuro.tasks.write_suite) or mathneuro.tasks.task_paths()")
    return manager


# lm-eval's batch size "auto" finds the largest batch that fits in GPU memory by catching CUDA
# out-of-memory errors, starting from this size. On the CPU nothing runs out, so it always lands
# here, after a forward pass of this many sequences of the model's maximum length (minutes).
AUTO_MAX_BATCH_SIZE = 64


def resolve_batch_size(batch_size: int | str, model) -> int | str:
    """``"auto"`` stays for a model on a GPU; on the CPU it is the size lm-eval's search would
    return anyway (``AUTO_MAX_BATCH_SIZE``), without the search."""
    if batch_size == "auto" and next(model.parameters()).device.type == "cpu":
        return AUTO_MAX_BATCH_SIZE
    return batch_size


def run_lm_eval(model, tokenizer, tasks: list[str], *, include_path=None,
                limit: int | float | None = None, batch_size: int | str = 16,
                max_gen_toks: int | None = None, num_fewshot: int | None = None,
                gen_kwargs: Mapping[str, Any] | None = None, apply_chat_template: bool = False,
                fewshot_as_multiturn: bool = True, system_instruction: str | None = None,
                log_samples: bool = False) -> dict:
    """lm-eval's ``simple_evaluate`` on an in-memory ``model``: its whole result (``results``,
    ``configs``, ``versions``, ``n-shot``, ``samples`` when ``log_samples``...).

    ``tasks`` are lm-eval task names (``toy_math``... with ``include_path`` pointing at a suite
    folder from ``mathneuro.tasks.write_suite``, or lm-eval's own tasks such as ``gsm8k_cot``).
    The model is used on the device it is already on. ``gen_kwargs``,
    ``apply_chat_template``, ``fewshot_as_multiturn`` and ``system_instruction`` go to
    lm-eval as given (its defaults); ``max_gen_toks`` (optional) caps the generation
    length of every generative task.
    """
    from mathneuro.models import lean_transformers

    lean_transformers()
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    if not tasks:
        raise ValueError("evaluate() needs at least one task name")
    manager = task_manager(list(tasks), include_path)
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=resolve_batch_size(batch_size, model))
    generation = {**(gen_kwargs or {}), **({} if max_gen_toks is None else {"max_gen_toks": int(max_gen_toks)})}
    return lm_eval.simple_evaluate(model=lm, tasks=list(tasks), task_manager=manager, limit=limit,
                                   gen_kwargs=generation or None, num_fewshot=num_fewshot,
                                   apply_chat_template=apply_chat_template,
                                   fewshot_as_multiturn=fewshot_as_multiturn,
                                   system_instruction=system_instruction, log_samples=log_samples)


def evaluate(model, tokenizer, tasks: list[str], **options):
    """``run_lm_eval`` as a tidy DataFrame (``results_frame``); values are fractions in [0, 1]."""
    return results_frame(run_lm_eval(model, tokenizer, tasks, **options))


SAMPLE_COLUMNS = ["task", "doc_id", "prompt", "target", "response", "extracted", "metric", "correct"]


def samples_frame(results: Mapping[str, Any]):
    """One row per evaluated document (and lm-eval filter) from ``run_lm_eval(..., log_samples=True)``:
    the prompt the model saw, the gold target, what the model answered (its generation, or the
    choice it found most likely), what lm-eval's filter extracted from that, and the first
    metric's value (``correct``)."""
    import pandas as pd

    rows = []
    for task, samples in (results.get("samples") or {}).items():
        for sample in samples:
            arguments = [tuple(a) if isinstance(a, (list, tuple)) else (a,) for a in sample["arguments"]]
            if arguments and len(arguments[0]) == 2 and isinstance(arguments[0][1], str):  # choices
                scores = [r[0] if isinstance(r, (list, tuple)) else r for r in sample["filtered_resps"]]
                response = extracted = arguments[max(range(len(scores)), key=scores.__getitem__)][1] if scores else ""
            else:  # a generation
                response, extracted = _first(sample["resps"]), _first(sample["filtered_resps"])
            metric = (sample.get("metrics") or [None])[0]
            rows.append({"task": task, "doc_id": int(sample["doc_id"]), "prompt": str(arguments[0][0]) if arguments else "",
                         "target": str(sample["target"]), "response": str(response), "extracted": str(extracted),
                         "metric": f"{metric},{sample.get('filter', 'none')}" if metric else None,
                         "correct": _finite(sample.get(metric)) if metric else math.nan})
    return pd.DataFrame(rows, columns=SAMPLE_COLUMNS)


def _first(value: Any) -> Any:
    """The first item of nested lists (lm-eval keeps one list of responses per request)."""
    while isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return value


def results_json(results: Mapping[str, Any]) -> str:
    """lm-eval's result without the per-sample records, as lm-eval writes it (JSON), and which
    mathneuro code made it (``mathneuro_code``)."""
    from lm_eval.utils import handle_non_serializable

    from mathneuro.provenance import fingerprint

    kept = {k: v for k, v in results.items() if k != "samples"}
    return json.dumps({**kept, "mathneuro_code": fingerprint()}, indent=1, default=handle_non_serializable)
