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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Mapping

import yaml

from mathneuro.data import split_names

COLUMNS = ["task", "metric", "value", "stderr", "n", "batch_size"]


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
    """The data set spec of ``spec``'s held-out texts, every record in order. Hub and synthetic
    specs read ``split`` instead of their identification split (ValueError if the two share a
    split: ``"train+test"`` against ``"train"`` too); file specs read the texts their ``heldout``
    names (another file, read whole; or ``part: heldout``: the records their identification never
    draws from), and ValueError without it."""
    import os

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
    other = spec.get("heldout") or {}
    if not other:
        raise ValueError("it reads a file and names no held-out texts: its bits per byte would be measured on "
                         "the texts its sets are found on; give its `heldout` ({path: <file>} or "
                         "{fraction: <share of the records>})")
    if "path" in other and os.path.normpath(str(other["path"])) == os.path.normpath(str(spec["path"])):
        raise ValueError(f"its heldout.path is its own path {spec['path']!r}: the held-out texts would be "
                         "those the sets are found on")
    if "path" in other:  # that file alone, every record: what its job reads, and all it depends on
        return {key: value for key, value in held.items() if key != "heldout"} | {"path": other["path"]}
    return held | {"part": "heldout"}


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


def write_bpb_tasks(specs: Mapping[str, Mapping[str, Any]], out_dir: str | Path, *,
                    local_data: Mapping[str, Any] | None = None, seed: int = 0) -> dict[str, int]:
    """For each data set label -> the spec of its held-out texts (:func:`heldout_spec`),
    ``{out_dir}/bpb_<label>.yaml`` and its texts ``bpb_<label>.jsonl``: every record the spec
    reads, rendered in its template, in an order shuffled under ``seed`` (so a suite's ``limit``
    takes a sample across MMLU's subjects rather than the first subject). Returns the number of
    texts per task."""
    import random

    from mathneuro.data import load_texts

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for label, spec in specs.items():
        name = f"{BPB_PREFIX}{label}"
        texts = list(load_texts(spec, local_data=local_data))
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
    """Tidy ``task, metric, value, stderr, n, batch_size`` rows from a ``run_lm_eval`` result.

    ``metric`` is lm-eval's ``name,filter`` key (e.g. ``acc,none``,
    ``exact_match,strict-match``); ``n`` is the number of documents evaluated; ``batch_size``
    the batch size the task's requests ran with (None for a group, or a result without it).
    """
    import pandas as pd

    rows = []
    n_samples = results.get("n-samples", {})
    used = (results.get("mathneuro_run") or {}).get("batch_sizes") or {}
    for task, metrics in results["results"].items():
        n = n_samples.get(task, {}).get("effective")
        output_type = (results.get("configs") or {}).get(task, {}).get("output_type")
        batch_size = used.get(REQUEST_TYPES.get(output_type))
        for key, value in metrics.items():
            name, _, filt = key.partition(",")
            if key == "alias" or name.endswith("_stderr") or not filt:
                continue
            stderr = metrics.get(f"{name}_stderr,{filt}")
            rows.append({"task": task, "metric": key, "value": _finite(value),
                         "stderr": _finite(stderr), "n": n, "batch_size": batch_size})
    return pd.DataFrame(rows, columns=COLUMNS).astype({"batch_size": "Int64"})


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


REQUEST_TYPES = {"generate_until": "generate_until", "multiple_choice": "loglikelihood",
                 "loglikelihood": "loglikelihood", "loglikelihood_rolling": "loglikelihood_rolling"}  # output type ->


def fitted_lm(model, tokenizer, batch_size: int | str):
    """lm-eval's ``HFLM`` on an in-memory model, whose batch-size search (``"auto"``) runs at the
    longest input the model is given, and which records the batch size each kind of request ran
    with (``batch_sizes_used``: request type -> size).

    lm-eval searches for ``generate_until`` and ``loglikelihood_rolling`` requests with inputs of
    ``max_length`` tokens, the model's whole context (131,072 positions for Llama 3.x), where the
    search ends at batch 1 or fails (lm-eval issues #3252, #2758). Here it searches at the longest
    input of the requests at hand: a generation's prompt plus its generation budget
    (``max_gen_toks``), a rolling text's tokens, each at most ``max_length``. ``max_length`` itself
    (truncation, rolling windows) and so the results are lm-eval's. ``loglikelihood`` requests are
    searched by lm-eval at their longest already."""
    from lm_eval.models.huggingface import HFLM
    from lm_eval.models.utils import normalize_gen_kwargs

    class FittedHFLM(HFLM):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.batch_sizes_used: dict[str, int] = {}
            self._running: str | None = None  # the request type being run
            self._longest: int | None = None  # its longest input, in tokens

        def longest_input(self, request_type: str, requests) -> int:
            """The longest input, in tokens, the model runs on for ``requests``."""
            if request_type == "generate_until":
                lengths = [len(self.tok_encode(context)) + normalize_gen_kwargs(dict(kwargs), self.max_gen_toks)[
                    "max_gen_toks"] for context, kwargs in (r.args for r in requests)]
            else:
                lengths = [len(self.tok_encode(r.args[0])) for r in requests]
            return min(self.max_length, max(lengths, default=1))

        def _run(self, request_type: str, run, requests, disable_tqdm: bool):
            self._running = request_type
            self._longest = self.longest_input(request_type, requests) if request_type != "loglikelihood" else None
            try:
                return run(requests, disable_tqdm=disable_tqdm)
            finally:
                if self.batch_size != "auto":
                    self.batch_sizes_used[request_type] = int(self.batch_size)
                self._running = self._longest = None

        def generate_until(self, requests, disable_tqdm: bool = False):
            return self._run("generate_until", super().generate_until, requests, disable_tqdm)

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            return self._run("loglikelihood_rolling", super().loglikelihood_rolling, requests, disable_tqdm)

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            return self._run("loglikelihood", super().loglikelihood, requests, disable_tqdm)

        def _detect_batch_size(self, requests=None, pos: int = 0):
            if not requests and self._longest is not None:  # lm-eval would search at max_length
                requests, pos = [(None, [self.prefix_token_id] * self._longest, [self.prefix_token_id])], 0
            size = super()._detect_batch_size(requests, pos)
            kind = self._running or "loglikelihood"
            self.batch_sizes_used[kind] = min(size, self.batch_sizes_used.get(kind, size))
            return size

    return FittedHFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size)


@contextmanager
def compiled_templates() -> Iterator[dict[str, Any]]:
    """lm-eval with each Jinja template compiled once, not once per document.

    lm-eval renders a task's ``doc_to_text``, ``doc_to_target`` and ``doc_to_choice`` templates
    with ``lm_eval.utils.apply_template``, which compiles the template string anew for every
    document it renders (``env.from_string``, twice per document and field): 2.4 s of a toy
    evaluation's 15 s, 3,208 compilations of 7 strings (``benchmarks/README.md``). Inside this
    block the compiled template is kept per string, in lm-eval's own environment, and rendered
    as lm-eval renders it, so every text is the same; afterwards lm-eval's function is back.
    Yields the cache (template string -> compiled template)."""
    import lm_eval.utils

    original, cache = lm_eval.utils.apply_template, {}

    def apply_template(template: str, doc: dict) -> str:
        compiled = cache.get(template)
        if compiled is None:
            compiled = cache[template] = lm_eval.utils.env.from_string(template)
        return compiled.render(**doc)

    lm_eval.utils.apply_template = apply_template
    try:
        yield cache
    finally:
        lm_eval.utils.apply_template = original


def subset_indices(sizes: Mapping[str, int], n: int, seed: int) -> dict[str, list[int]]:
    """``n`` items of each task drawn without replacement under ``seed`` (all of a task with ``n``
    or fewer), sorted: task -> document indices. A task's draw depends on its name, size, ``n`` and
    ``seed`` only, so every variant and repeat evaluates the same items."""
    import hashlib

    import numpy as np

    drawn = {}
    for task, size in sizes.items():
        key = int.from_bytes(hashlib.sha256(task.encode()).digest()[:8], "little")
        rng = np.random.default_rng([int(seed), key])
        drawn[task] = sorted(int(i) for i in rng.choice(size, size=min(n, size), replace=False))
    return drawn


def run_lm_eval(model, tokenizer, tasks: list[str], *, include_path=None,
                limit: int | float | None = None, subset: Mapping[str, int] | None = None,
                batch_size: int | str = 16, max_gen_toks: int | None = None, num_fewshot: int | None = None,
                gen_kwargs: Mapping[str, Any] | None = None, apply_chat_template: bool = False,
                fewshot_as_multiturn: bool = True, system_instruction: str | None = None,
                log_samples: bool = True) -> dict:
    """lm-eval's ``simple_evaluate`` on an in-memory ``model``: its whole result (``results``,
    ``configs``, ``versions``, ``n-shot``, ``samples`` when ``log_samples``...), and what this
    project adds under ``"mathneuro_run"``: the batch size each request type ran with and the items
    of a ``subset``.

    ``tasks`` are lm-eval task names (``toy_math``... with ``include_path`` pointing at a suite
    folder from ``mathneuro.tasks.write_suite``, or lm-eval's own tasks such as ``gsm8k_cot``).
    ``limit`` is lm-eval's (the first ``limit`` items of each task); ``subset`` (``{"n", "seed"}``)
    evaluates ``n`` items of each leaf task drawn under ``seed`` (:func:`subset_indices`), passed
    to lm-eval by index. The model is used on the device it is already on (:func:`fitted_lm`).
    ``gen_kwargs``, ``apply_chat_template``, ``fewshot_as_multiturn`` and ``system_instruction``
    go to lm-eval as given (its defaults); ``max_gen_toks`` (optional) caps the generation
    length of every generative task.
    """
    from mathneuro.models import lean_transformers

    lean_transformers()
    import lm_eval

    if not tasks:
        raise ValueError("evaluate() needs at least one task name")
    if limit is not None and subset is not None:
        raise ValueError("give limit (lm-eval's first items) or subset (seeded items), not both")
    manager = task_manager(list(tasks), include_path)
    lm = fitted_lm(model, tokenizer, resolve_batch_size(batch_size, model))
    samples = None
    if subset is not None:  # the leaf tasks' sizes: their documents are loaded once more by lm-eval
        leaves = manager.load(list(tasks))["tasks"]
        samples = subset_indices({name: len(task.eval_docs) for name, task in leaves.items()},
                                 subset["n"], subset["seed"])
    generation = {**(gen_kwargs or {}), **({} if max_gen_toks is None else {"max_gen_toks": int(max_gen_toks)})}
    with compiled_templates():
        results = lm_eval.simple_evaluate(model=lm, tasks=list(tasks), task_manager=manager, limit=limit,
                                          samples=samples, gen_kwargs=generation or None, num_fewshot=num_fewshot,
                                          apply_chat_template=apply_chat_template,
                                          fewshot_as_multiturn=fewshot_as_multiturn,
                                          system_instruction=system_instruction, log_samples=log_samples)
    results["mathneuro_run"] = {"batch_sizes": dict(lm.batch_sizes_used), "subset": samples}
    return results


def evaluate(model, tokenizer, tasks: list[str], **options):
    """``run_lm_eval`` as a tidy DataFrame (``results_frame``); values are fractions in [0, 1]."""
    return results_frame(run_lm_eval(model, tokenizer, tasks, **options))


SAMPLE_COLUMNS = ["task", "doc_id", "metric", "score", "loglikelihood", "weight", "chosen", "response", "extracted",
                  "prompt", "target"]


def _chosen(sample: Mapping[str, Any], metric: str) -> tuple[int, str] | None:
    """A multiple-choice record's chosen answer (index, text) as ``metric`` scores it: the most
    likely choice, for ``acc_norm`` per character of the choice (lm-eval's normalisation); None
    for records of other requests."""
    arguments = [tuple(a) if isinstance(a, (list, tuple)) else (a,) for a in sample["arguments"]]
    if not (arguments and len(arguments[0]) == 2 and isinstance(arguments[0][1], str)):
        return None
    scores = [r[0] if isinstance(r, (list, tuple)) else r for r in sample["filtered_resps"]]
    if not scores:
        return None
    if metric == "acc_norm":
        scores = [score / max(1, len(choice)) for score, (_, choice) in zip(scores, arguments)]
    best = max(range(len(scores)), key=scores.__getitem__)
    return best, arguments[best][1]


def samples_frame(results: Mapping[str, Any], *, text: bool = True):
    """The per-item records of ``run_lm_eval(..., log_samples=True)``: one row per task, document
    (``doc_id``, its index in the task's evaluated split: the item's id across variants) and
    metric (lm-eval's ``name,filter``), with

    * ``score``: the item's value of a metric lm-eval averages over items (1.0/0.0 for accuracy
      and exact match); NaN for a corpus metric;
    * ``loglikelihood`` and ``weight``: a corpus metric's pair (``bits_per_byte``: the text's
      log-likelihood and its bytes; ``word_perplexity``: and its words);
    * ``chosen`` and ``response``: the answer, the index and text of the choice the metric found
      most likely (multiple choice) or the generation; ``extracted``: what lm-eval's filter took
      from a generation;
    * ``prompt`` and ``target``, the item itself, only with ``text`` (the same for every variant:
      the workflow keeps them with the unedited model's records alone).
    """
    import pandas as pd

    rows = []
    for task, samples in (results.get("samples") or {}).items():
        for sample in samples:
            arguments = [tuple(a) if isinstance(a, (list, tuple)) else (a,) for a in sample["arguments"]]
            choice = _chosen(sample, "acc") is not None
            item = {"task": task, "doc_id": int(sample["doc_id"]),
                    "prompt": (str(arguments[0][0]) if arguments else "") if text else None,
                    "target": str(sample["target"]) if text else None}
            for metric in sample.get("metrics") or []:
                value = sample.get(metric)
                pair = isinstance(value, (list, tuple)) and len(value) == 2  # a corpus metric's
                chosen = _chosen(sample, metric) if choice else None
                generated = not choice and not pair
                rows.append({**item, "metric": f"{metric},{sample.get('filter', 'none')}",
                             "score": math.nan if pair else _finite(value),
                             "loglikelihood": _finite(value[0]) if pair else math.nan,
                             "weight": _finite(value[1]) if pair else math.nan,
                             "chosen": chosen[0] if chosen else None,
                             "response": chosen[1] if chosen else str(_first(sample["resps"])) if generated else None,
                             "extracted": str(_first(sample["filtered_resps"])) if generated else None})
    return pd.DataFrame(rows, columns=SAMPLE_COLUMNS).astype({"chosen": "Int64"})


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
