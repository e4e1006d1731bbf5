"""lm-eval task folders (mathneuro.tasks): every task a config names imports, and a suite folder
holds lm-eval's definitions unchanged but for where the data comes from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import SHARED_DATA

from mathneuro import synthetic
from mathneuro.configs import compose
from mathneuro.evaluate import is_generated_task
from mathneuro.tasks import (PROJECT_TASKS, definition_files, leaf_tasks, local_only_data, project_configs, task_paths,
                             unserved_tasks, write_suite)

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [REPO / "config.yaml", *sorted((REPO / "configs").glob("*/*.yaml")),
           *sorted((REPO / "tests" / "configs").glob("*.yaml"))]
FIXTURES = REPO / "tests" / "fixtures" / "hub"
DATA_KEYS = {"dataset_path", "dataset_name", "dataset_kwargs"}


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=task_paths())  # lm-eval's tasks and the project's (EGSM, the toy's)


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


# --- the toy's tasks (mathneuro/lm_tasks/toy): project tasks on data only local_data holds --------

TOY_TASKS = {task: f"toy_{task}" for task in synthetic.TASKS}


def test_each_synthetic_task_is_asked_in_the_prompt_the_toy_model_is_trained_on():
    """The toy YAMLs hold synthetic.PROMPTS' text: rendered on generated records, their doc_to_text
    is the prompt the model is trained on."""
    import jinja2

    configs = project_configs()
    for task, name in TOY_TASKS.items():
        leaves = configs[name]["task"] if "group" in configs[name] else [name]  # reading, facts: groups
        for leaf in leaves:
            template = jinja2.Template(configs[leaf]["doc_to_text"], keep_trailing_newline=True)
            for record in synthetic.generate(task, n_train=0, n_test=5, seed=0)["test"]:
                assert template.render(**record) == synthetic.prompt_text(task, record)


@pytest.mark.parametrize("task", ["reading", "facts"])
def test_a_control_group_splits_its_items_by_numeric_answer(task, tmp_path):
    """toy_reading and toy_facts are groups of the items answered by a number and those answered by
    a word: each leaf loads exactly its kind, and together they are the whole test split."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("toy_utils", PROJECT_TASKS / "toy" / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    import datasets

    records = synthetic.generate(task, n_train=0, n_test=40, seed=3)["test"]
    dataset = datasets.Dataset.from_list(records)
    numbers, words = utils.numbers(dataset), utils.words(dataset)
    assert [d["id"] for d in numbers] == [r["id"] for r in records if r["answer"].isdigit()]
    assert [d["id"] for d in words] == [r["id"] for r in records if not r["answer"].isdigit()]
    assert len(numbers) and len(words)
    assert project_configs()[f"toy_{task}"]["task"] == [f"toy_{task}_numbers", f"toy_{task}_words"]


def test_the_project_configs_are_what_lm_eval_reads(manager):
    """project_configs (read without lm-eval, includes merged) agrees with lm-eval's index."""
    configs = project_configs()
    assert set(TOY_TASKS.values()) <= set(configs)
    for name, config in configs.items():
        indexed = manager.task_index[name].cfg
        assert {key: config.get(key) for key in ("task", "dataset_path", "output_type", "doc_to_text")} == {
            key: indexed.get(key) for key in ("task", "dataset_path", "output_type", "doc_to_text")}
    assert configs["toy_math_reworded"]["generation_kwargs"] == configs["toy_math"]["generation_kwargs"]
    assert configs["toy_math"]["generation_kwargs"]["max_gen_toks"] == 64


def test_a_project_tasks_definition_files_hold_every_yaml_lm_eval_reads_for_it(manager):
    """For each project task and group: the YAML lm-eval indexes it by, and its members' (what a
    suite of it is made from, besides the files they include and import)."""
    for name in project_configs():
        files = set(definition_files([name]))
        leaves, groups = leaf_tasks(manager, [name])
        assert {str(Path(e.yaml_path)) for e in {**leaves, **groups}.values()} <= files, name
        assert all(Path(f).is_relative_to(PROJECT_TASKS) for f in files)
    assert set(definition_files(["egsm_fewshot"])) == {str(PROJECT_TASKS / "egsm" / f)
                                                      for f in ("egsm_fewshot.yaml", "egsm.yaml", "utils.py")}


def test_a_users_task_is_defined_by_its_yaml_what_it_includes_and_imports_and_nothing_else(tmp_path):
    (tmp_path / "_base_yaml").write_text("output_type: generate_until\nprocess_docs: !function helpers.docs\n")
    (tmp_path / "helpers.py").write_text("def docs(d):\n    return d\n")
    (tmp_path / "a.yaml").write_text("include: _base_yaml\ntask: a\n")
    (tmp_path / "b.yaml").write_text("task: b\ntag: [mine]\n")
    (tmp_path / "c.yaml").write_text("task: c\n")
    (tmp_path / "unused.py").write_text("")
    (tmp_path / "group.yaml").write_text("group: g\ntask: [a, toy_math]\n")
    named = lambda *names: {Path(f).relative_to(tmp_path).as_posix() if Path(f).is_relative_to(tmp_path) else
                            Path(f).relative_to(PROJECT_TASKS).as_posix() for f in definition_files(names, tmp_path)}
    assert named("a") == {"a.yaml", "_base_yaml", "helpers.py"}
    assert named("g") == {"group.yaml", "a.yaml", "_base_yaml", "helpers.py", "toy/toy_math.yaml"}
    assert named("mine") == {"b.yaml"} and named("c") == {"c.yaml"}
    assert named("gsm8k_cot") == set()  # lm-eval's own: its version says what it is


def test_a_family_as_large_as_the_paper_configs_largest_keeps_every_strong_effect_significant(manager):
    """Holm over one set's tasks (mathneuro.evidence): the paper config's suites reach at most
    that many lm-eval tasks and groups (counted from lm-eval's index, not typed in). A strong
    pooled effect (100 items lost, in one repeat or both) has its adjusted p ten times under 0.05
    in a family that large, which the first draws' floor (2e-4) alone could not promise."""
    import numpy as np

    from mathneuro.stats import holm, sign_flip_p

    suites = compose([REPO / "configs" / "paper.yaml"])["evaluation"]["suites"]
    family = sum(len(leaves) + len(groups) for leaves, groups in
                 (leaf_tasks(manager, suite["tasks"]) for suite in suites.values()))
    assert family > 57  # MMLU's subjects alone
    strong = sign_flip_p(-np.random.default_rng(0).choice([0.5, 1.0], size=100))  # every row as strong
    assert (holm([strong] * family) < 0.05 / 10).all()


def test_only_the_toys_data_is_local_only():
    """A group's are its members' (toy_facts: its numeric and its word items, one data set)."""
    assert {name: local_only_data(name) for name in ("toy_math", "toy_facts", "toy_facts_numbers", "egsm", "gsm8k_cot")} == {
        "toy_math": ["mathneuro/toy_math"], "toy_facts": ["mathneuro/toy_facts"],
        "toy_facts_numbers": ["mathneuro/toy_facts"], "egsm": [], "gsm8k_cot": []}


def test_a_toy_suite_includes_the_projects_yaml_and_reads_the_synthetic_files(tmp_path):
    files = {task: synthetic.write_task(task, tmp_path / "data", n_train=2, n_test=3, seed=0)
             for task in ("math", "reading")}
    local = {f"mathneuro/toy_{task}": {"files": {split: str(path) for split, path in paths.items()}}
             for task, paths in files.items()}
    manifest = write_suite(["toy_math", "toy_reading"], tmp_path / "suite", local_data=local)
    leaves = {"toy_math": "math", "toy_reading_numbers": "reading", "toy_reading_words": "reading"}
    assert sorted(manifest["leaves"]) == sorted(leaves) and manifest["groups"] == ["toy_reading"]
    for name, task in leaves.items():
        written = yaml.safe_load((tmp_path / "suite" / f"{name}.yaml").read_text())
        test = {"test": [str(files[task]["test"].resolve())]}  # the test split alone: all the task reads
        assert written == {"include": str((PROJECT_TASKS / "toy" / f"{name}.yaml").resolve()),
                           "dataset_path": "json", "dataset_name": None, "dataset_kwargs": {"data_files": test}}
        assert manifest["leaves"][name]["data_files"] == test
    group = yaml.safe_load((tmp_path / "suite" / "toy_reading.yaml").read_text())
    assert group == {"include": str((PROJECT_TASKS / "toy" / "toy_reading.yaml").resolve())}


def test_toy_data_without_local_data_is_named_before_any_job(tmp_path):
    suites = {"toy": {"tasks": ["toy_math", "toy_reading"]}, "paper": {"tasks": ["egsm", "gsm8k_cot"]}}
    local = {"mathneuro/toy_reading": {"files": {"test": "reading.jsonl"}}}
    problems = unserved_tasks(suites, local)
    assert len(problems) == 1 and "suites.toy" in problems[0] and "'toy_math'" in problems[0]
    assert "mathneuro/toy_math" in problems[0]
    local["elsewhere"] = {"aliases": ["mathneuro/toy_math"], "files": {"test": "math.jsonl"}}
    assert unserved_tasks(suites, local) == []
    with pytest.raises(ValueError, match="toy_math.*mathneuro/toy_math"):
        write_suite(["toy_math"], tmp_path, local_data={})
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("configfile", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_config_serves_the_toy_data_it_evaluates(configfile):
    config = compose([configfile])
    assert unserved_tasks(config["evaluation"]["suites"], config.get("local_data") or {}) == []
