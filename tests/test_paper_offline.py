"""The paper's configuration, run end to end offline: a real model format (random weights, bf16,
device auto, batch size auto), the hub's record formats, and lm-eval's own tasks."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import SHARED_DATA
from dag import snakemake, write_config

from mathneuro.configs import compose

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
OFFLINE = REPO / "tests" / "configs" / "paper_offline.yaml"
PAPER_1B = REPO / "configs" / "models" / "llama-3.2-1b-it.yaml"
# What the offline config may change in the 1B paper config: the model, where data comes from,
# and sizes (repeats, samples, K, the sets data efficiency evaluates, which MMLU subjects and MATH
# subtasks, items and lengths).
SUBSTITUTED = {
    "study", "models", "local_data", "identification.n_samples", "identification.seeds", "pruning.k", "scaling.k",
    "consistency.n_samples", "consistency.seeds", "data_efficiency.methods", "evaluation.suites.gsm8k.limit", "evaluation.suites.gsm8k.max_gen_toks",
    "evaluation.suites.race.limit", "evaluation.suites.mmlu.tasks", "evaluation.suites.mmlu.limit",
    "evaluation.suites.math.tasks", "evaluation.suites.math.limit", "evaluation.suites.math.max_gen_toks",
    "evaluation.suites.egsm.limit", "evaluation.suites.egsm.max_gen_toks",
}


def differences(a, b, prefix=""):
    """Dotted keys whose values differ between two configs (a substituted key as a whole)."""
    if prefix.rstrip(".") in SUBSTITUTED:
        return set() if a == b else {prefix.rstrip(".")}
    if isinstance(a, dict) and isinstance(b, dict):
        return {d for key in a.keys() | b.keys() for d in differences(a.get(key), b.get(key), f"{prefix}{key}.")}
    return set() if a == b else {prefix.rstrip(".")}


def test_the_offline_config_is_the_1b_paper_config_but_for_model_data_location_and_sizes():
    offline, paper = compose([OFFLINE]), compose([PAPER_1B])
    assert differences(offline, paper) <= SUBSTITUTED
    model = next(iter(offline["models"].values()))
    loaded_as = {key: model[key] for key in ("dtype", "device", "eval_batch_size")}
    assert loaded_as == {key: next(iter(paper["models"].values()))[key] for key in loaded_as}
    assert offline["offline"] is True
    for suite in ("mmlu", "math"):
        prefix = "mmlu_" if suite == "mmlu" else "minerva_math_"
        assert all(task.startswith(prefix) for task in offline["evaluation"]["suites"][suite]["tasks"])


def with_absolute_paths(config: dict) -> dict:
    """The config as run from the repository root, for a run in another folder."""
    for entry in config["local_data"].values():
        if "mmlu_release" in entry:
            entry["mmlu_release"] = os.path.normpath(REPO / entry["mmlu_release"])
        for split, pattern in entry.get("files", {}).items():
            entry["files"][split] = os.path.normpath(REPO / pattern)
    return config


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory) -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data (GSM8K, MMLU) is not on this machine")
    workdir = tmp_path_factory.mktemp("paper_offline")
    configfile = write_config(workdir / "paper_offline.yaml", with_absolute_paths(compose([OFFLINE])))
    snakemake(workdir, configfile, "--cores", "2")
    return workdir


def test_the_offline_paper_run_tables_carry_each_real_tasks_own_metrics(offline_run):
    pruning = pd.read_parquet(offline_run / "results/tables/paper-offline/pruning.parquet")
    metrics = {task: set(rows) for task, rows in pruning.groupby("task")["metric"]}
    assert metrics["gsm8k_cot"] == {"exact_match,strict-match", "exact_match,flexible-extract"}
    assert metrics["race"] == {"acc,none"}
    assert {t for t in metrics if t.startswith("mmlu_")} == {"mmlu_high_school_mathematics", "mmlu_world_religions"}
    assert {t for t in metrics if t.startswith("minerva_math")} == {"minerva_math_algebra", "minerva_math_prealgebra"}
    assert metrics["minerva_math_algebra"] >= {"exact_match,none", "math_verify,none"}
    for task in ("egsm", "egsm_fewshot"):  # the project's own tasks, on the fixture's two first items
        assert metrics[task] == {"exact_match,strict-match", "exact_match,flexible-extract"}
    config = compose([OFFLINE])
    assert set(pruning.loc[pruning["skill_task"], "task"]) >= set(config["evaluation"]["skill_tasks"]) - {"minerva_math"}
    assert set(pruning["method"]) == set(config["pruning"]["methods"])
    controls = config["identification"]["controls"]
    assert set(pruning["control"]) == {*controls, "+".join(sorted(controls)), "none"}  # each, all at once, none
    assert pruning["value"].between(0, 1).all() and (pruning["n"] == 2).all()


def test_the_offline_model_was_loaded_as_the_paper_configs_load_theirs(offline_run):
    log = (offline_run / "logs/evaluate/llama-offline/base/gsm8k.log").read_text()
    assert "torch.bfloat16" in log and "batch size" in log.lower()
