"""lm-eval task folders (mathneuro.tasks): every task a config names imports, and a suite folder
holds lm-eval's definitions unchanged but for where the data comes from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import SHARED_DATA

from mathneuro.configs import compose
from mathneuro.evaluate import is_generated_task
from mathneuro.tasks import leaf_tasks, task_paths, write_suite

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [REPO / "config.yaml", *sorted((REPO / "configs").glob("*/*.yaml")),
           *sorted((REPO / "tests" / "configs").glob("*.yaml"))]
FIXTURES = REPO / "tests" / "fixtures" / "hub"
DATA_KEYS = {"dataset_path", "dataset_name", "dataset_kwargs"}


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=task_paths())  # lm-eval's tasks and the project's (EGSM)


def lm_eval_tasks(configfile: Path) -> list[str]:
    suites = compose([configfile])["evaluation"]["suites"].values()
    return sorted({task for suite in suites for task in suite["tasks"] if not is_generated_task(task)})


@pytest.mark.parametrize("configfile", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_task_a_config_names_exists_and_imports(manager, configfile):
    """All of lm-eval's leaf tasks behind a config's suites, with their `!function` helpers
    imported (minerva_math needs sympy and math-verify: lm-eval's `math` extra)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    leaves, _ = leaf_tasks(manager, lm_eval_tasks(configfile))
    for name, entry in leaves.items():
        config = load_yaml(entry.yaml_path, resolve_func=True)
        assert config["task"] == name


def gsm8k_local(**files):
    return {"openai/gsm8k": {"aliases": ["gsm8k"], "files": files}}


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data (GSM8K, MMLU) is not on this machine")
def test_suite_folder_includes_lm_evals_definition_and_redirects_only_the_data(manager, tmp_path):
    local = gsm8k_local(train=str(SHARED_DATA / "gsm8k/train.jsonl"), test=str(SHARED_DATA / "gsm8k/test.jsonl"))
    local["EleutherAI/hendrycks_math"] = {"files": {s: str(FIXTURES / f"EleutherAI/hendrycks_math/{{name}}/{s}.jsonl")
                                                    for s in ("train", "test")}}
    manifest = write_suite(["gsm8k_cot", "race"], tmp_path, local_data=local, manager=manager)
    assert set(manifest["leaves"]) == {"gsm8k_cot", "race"}
    written = yaml.safe_load((tmp_path / "gsm8k_cot.yaml").read_text())
    assert written["include"] == str(manager.task_index["gsm8k_cot"].yaml_path.resolve())
    assert set(written) == {"include"} | DATA_KEYS
    assert written["dataset_kwargs"]["data_files"]["test"] == [str((SHARED_DATA / "gsm8k/test.jsonl").resolve())]
    # race has no local copy: its YAML is lm-eval's, included as it is (data from the hub)
    assert yaml.safe_load((tmp_path / "race.yaml").read_text()) == {
        "include": str(manager.task_index["race"].yaml_path.resolve())}
    from lm_eval.tasks import TaskManager

    alone = TaskManager(include_path=str(tmp_path), include_defaults=False)
    assert {"gsm8k_cot", "race"} <= set(alone.all_tasks)


def test_a_group_brings_its_subtasks_and_groups(manager, tmp_path):
    local = {"EleutherAI/hendrycks_math": {"files": {s: str(FIXTURES / f"EleutherAI/hendrycks_math/{{name}}/{s}.jsonl")
                                                     for s in ("train", "test")}}}
    with pytest.raises(FileNotFoundError, match="minerva_math_.*hendrycks_math not found"):  # two subjects shipped
        write_suite(["minerva_math"], tmp_path, local_data=local, manager=manager)
    manifest = write_suite(["minerva_math_algebra", "minerva_math_prealgebra"], tmp_path, local_data=local,
                           manager=manager)
    files = manifest["leaves"]["minerva_math_algebra"]["data_files"]
    assert files["test"] == [str(FIXTURES / "EleutherAI/hendrycks_math/algebra/test.jsonl")]


def test_local_data_without_a_split_the_task_reads_fails_naming_it(manager, tmp_path):
    with pytest.raises(ValueError, match="gsm8k_cot.*'test'"):
        write_suite(["gsm8k_cot"], tmp_path, local_data=gsm8k_local(train="train.jsonl"), manager=manager)
    assert not list(tmp_path.iterdir())  # nothing written


def test_unknown_task_is_named(manager, tmp_path):
    with pytest.raises(ValueError, match="no_such_task"):
        write_suite(["no_such_task"], tmp_path, manager=manager)
