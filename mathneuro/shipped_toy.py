"""The toy model the repository ships: trained once from ``config.yaml``, used wherever its recipe
matches, so the default run's tables come out the same on every machine with the same libraries.

A toy is made by a *recipe*: the synthetic tasks it trains on (their sizes and the seed: math's test
items are drawn first and kept out of its train split, so ``n_test`` shapes the train texts too) and
the ``toy_model`` settings. ``mathneuro/toy_model/`` holds the model that ``config.yaml``'s recipe
makes (weights as safetensors, the tokenizer) and ``RECORD``, how it was made: the recipe and its
digest, the digests of the train files it read, the library versions, steps, seconds and threads,
and its unedited accuracy on the toy's test tasks. The workflow copies it in place of training
when a config's recipe digest is the record's (rule ``shipped_toy_model``), after checking that
the train files it generated are those the record names; any other recipe trains a new model (rule
``train_toy_model``).

Retrain the shipped toy (after changing ``config.yaml``'s recipe or the generators of
``mathneuro.synthetic``)::

    .venv/bin/python -m mathneuro.shipped_toy [--configfile config.yaml] [--out mathneuro/toy_model]

Retraining with other library versions or on another CPU gives another model (training drifts;
docs/results.md: spread between runs); ``tests/test_shipped_toy.py`` retrains it and checks that
the unedited accuracies stay within ``BAND`` of the record's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).parent / "toy_model"
RECORD = "mathneuro_toy.json"
LIBRARIES = ("torch", "transformers", "tokenizers")
BAND = 0.10  # a retrained toy's unedited accuracy on each task, within this of the shipped one's


def recipe(config: Mapping[str, Any]) -> dict[str, Any]:
    """What makes a toy model: the trained tasks' sizes, the data seed and ``toy_model``."""
    from mathneuro.study.common import canonical
    from mathneuro.synthetic import trained_tasks

    synthetic = config["synthetic"]
    tasks = {t: dict(synthetic["tasks"][t]) for t in trained_tasks(synthetic["tasks"])}
    seed = synthetic.get("seed", 0)  # the schema's default; toy_model's keys have none there (train_toy's own)
    return canonical({"synthetic": {"seed": seed, "tasks": tasks}, "toy_model": dict(config.get("toy_model", {}))})


def recipe_digest(config: Mapping[str, Any]) -> str:
    """SHA-256 of the recipe as canonical JSON."""
    return hashlib.sha256(json.dumps(recipe(config), sort_keys=True).encode()).hexdigest()


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_record(folder: str | Path = SHIPPED) -> dict[str, Any] | None:
    """The record of the toy in ``folder``, or None when there is none."""
    path = Path(folder) / RECORD
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def matches(config: Mapping[str, Any], folder: str | Path = SHIPPED) -> bool:
    """Whether the toy in ``folder`` was made by ``config``'s recipe."""
    record = read_record(folder)
    return record is not None and record["recipe_digest"] == recipe_digest(config)


def data_problems(train_files: Mapping[str, str | Path], folder: str | Path = SHIPPED) -> list[str]:
    """Train files (task -> path) other than those the toy in ``folder`` was trained on, named."""
    expected = read_record(folder)["data"]
    got = {task: file_sha256(path) for task, path in train_files.items()}
    problems = [f"{task}: {train_files[task]} has SHA-256 {got.get(task)}, the shipped toy read {sha}"
                for task, sha in expected.items() if got.get(task) != sha]
    problems += [f"{task}: the shipped toy did not train on it" for task in got if task not in expected]
    return problems


def copy_model(folder: str | Path, out_dir: str | Path) -> None:
    """The toy's files (weights, tokenizer, configs, record) copied into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and not path.name.startswith((".", "__")):
            shutil.copy2(path, out_dir / path.name)


def unedited_accuracy(model_dir: str | Path, test_files: Mapping[str, str | Path], folder: str | Path) -> dict[str, float]:
    """The toy's accuracy on each synthetic task's test split (lm-eval, the toy's task YAMLs; for
    reading and facts also their number and word items), by task name."""
    from mathneuro.evaluate import evaluate
    from mathneuro.tasks import write_suite
    from mathneuro.toy import load_toy

    tasks = [f"toy_{task}" for task in test_files]
    local = {f"mathneuro/toy_{task}": {"files": {"test": str(path)}} for task, path in test_files.items()}
    write_suite(tasks, folder, local_data=local)
    model, tokenizer = load_toy(model_dir)
    table = evaluate(model, tokenizer, tasks, include_path=folder, batch_size=256)
    headline = table[table["metric"].isin(["exact_match,strict-match", "acc,none"])]
    return {row.task: round(float(row.value), 6) for row in headline.sort_values("task").itertuples()}


def ship(config: Mapping[str, Any], out_dir: str | Path = SHIPPED, *, num_threads: int = 2, log=print) -> dict[str, Any]:
    """Generate the recipe's synthetic data, train the toy on it, measure its unedited accuracy,
    and write model, tokenizer and record into ``out_dir`` (its model files replaced); return
    the record."""
    from mathneuro import synthetic
    from mathneuro.toy import train_toy

    made = recipe(config)
    with tempfile.TemporaryDirectory(prefix="mathneuro-toy-") as tmp:
        tmp = Path(tmp)
        seed = made["synthetic"]["seed"]
        files = {task: synthetic.write_task(task, tmp / "data", seed=seed, **sizes)
                 for task, sizes in made["synthetic"]["tasks"].items()}
        start = time.perf_counter()
        train_toy({t: f["train"] for t, f in files.items()}, tmp / "model", **made["toy_model"],
                  num_threads=num_threads, log=log)
        seconds = time.perf_counter() - start
        accuracy = unedited_accuracy(tmp / "model", {t: f["test"] for t, f in files.items()}, tmp / "suite")
        record = {
            "recipe_digest": recipe_digest(config),
            "recipe": made,
            "data": {task: file_sha256(f["train"]) for task, f in sorted(files.items())},
            "versions": {name: version(name) for name in LIBRARIES},
            "steps": made["toy_model"].get("steps"),
            "seconds": round(seconds, 1),
            "threads": num_threads,
            "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "made": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "unedited": accuracy,
        }
        (tmp / "model" / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        out_dir = Path(out_dir)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        copy_model(tmp / "model", out_dir)
    log(f"shipped toy written to {out_dir}: {json.dumps(record['unedited'])}")
    return record


def main(argv: Sequence[str] | None = None) -> int:
    from mathneuro.configs import compose

    parser = argparse.ArgumentParser(prog="python -m mathneuro.shipped_toy", description="Retrain the shipped toy model from a config's recipe.")
    parser.add_argument("--configfile", default="config.yaml", help="the config whose recipe to train (default: config.yaml)")
    parser.add_argument("--out", default=str(SHIPPED), help=f"where to write it (default: {SHIPPED})")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for training (default: 2)")
    args = parser.parse_args(argv)
    config = compose([args.configfile], {})
    if "synthetic" not in config:
        raise SystemExit(f"{args.configfile}: no synthetic section to train a toy on")
    ship(config, args.out, num_threads=args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
