"""Reruns by content, never by clock (mathneuro.freshness), on a small study that reads every kind
of input a config can name from outside results/: a JSON-lines and a CSV data file, a held-out
file, local copies of the toy tasks' data (local_data), an MMLU release folder, a local model
folder, a GGUF file and a user's task YAMLs (evaluation.include_path).

A finished study (faked: every output made in DAG order and recorded by Snakemake, tests/dag.py)
plans nothing after its external inputs are touched or copied again with the same content, after
the study is copied elsewhere with or without its files' times, and in a fresh copy of the
workflow; one changed byte in any external input reruns exactly the jobs that read it and what
depends on them, computed from the DAG."""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from dag import ALWAYS, REPO, descendants, fake_finished_run, planned, snakemake, write_config

from mathneuro import synthetic
from mathneuro.configs import compose

pytestmark = pytest.mark.workflow

TEMPLATE = "Question: {question}\nAnswer: {answer}"


def jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def write_inputs(ext: Path) -> dict[str, Path]:
    """Every kind of external input, by the name the tests give it."""
    math = synthetic.generate("math", n_train=40, n_test=12, seed=0)
    reading = synthetic.generate("reading", n_train=40, n_test=6, seed=0)
    inputs = {
        "json data file": jsonl(ext / "math.jsonl", math["train"]),
        "held-out file": jsonl(ext / "math_heldout.jsonl", math["test"]),
        "local_data file": jsonl(ext / "toy_math_test.jsonl", math["test"][:4]),
    }
    jsonl(ext / "toy_reading_test.jsonl", reading["test"][:4])
    with (ext / "reading.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "answer"])
        writer.writerows([[r["question"], r["answer"]] for r in reading["train"]])
    inputs["csv data file"] = ext / "reading.csv"
    for folder, split in (("dev", "dev"), ("val", "val"), ("test", "test")):
        (ext / "mmlu" / folder).mkdir(parents=True, exist_ok=True)
        rows = [[f"{split} question {i}: 2 + {i}?", str(i), str(i + 1), str(i + 2), str(i + 3), "C"] for i in range(5)]
        with (ext / "mmlu" / folder / f"abstract_algebra_{split}.csv").open("w", newline="") as handle:
            csv.writer(handle).writerows(rows)
    inputs["MMLU release folder"] = ext / "mmlu"
    inputs["local model folder"] = save_model(ext / "model")
    inputs["GGUF file"] = write_gguf(ext / "gguf" / "tiny.gguf")
    tasks = ext / "tasks"
    tasks.mkdir()
    (tasks / "my_task.yaml").write_text(
        "task: my_task\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {ext / 'toy_reading_test.jsonl'}}}}}\n"
        "test_split: test\noutput_type: multiple_choice\ndoc_to_text: '{{question}}'\n"
        "doc_to_choice: '{{choices}}'\ndoc_to_target: label\nmetric_list: [{metric: acc}]\n# revision 1\n")
    inputs["task YAML"] = tasks / "my_task.yaml"
    (tasks / "other_task.yaml").write_text("task: other_task\ndataset_path: json\n# no suite names it\n")
    return inputs


def save_model(folder: Path) -> Path:
    from conftest import char_tokenizer, tiny_llama

    tokenizer = char_tokenizer()
    tiny_llama(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_gguf(path: Path) -> Path:
    from gguf import GGUFWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def config(ext: str) -> dict:
    """A small study on two models, every input outside results/ (paths relative to the workdir)."""
    model = {"dtype": "float32", "device": "cpu", "gpus": 0, "size_b": 0.001, "threads": 1, "collect_batch_size": 8,
             "eval_batch_size": 8}
    return {
        "study": "external",
        "local_data": {
            "mathneuro/toy_math": {"files": {"test": f"{ext}/toy_math_test.jsonl"}},
            "mathneuro/toy_reading": {"files": {"test": f"{ext}/toy_reading_test.jsonl"}},
            "cais/mmlu": {"mmlu_release": f"{ext}/mmlu", "aliases": []},
        },
        "models": {"local": {"path": f"{ext}/model", **model},
                   "quantized": {"path": f"{ext}/gguf", "gguf": "tiny.gguf", **model}},
        "datasets": {
            "math": {"source": "json", "path": f"{ext}/math.jsonl", "template": TEMPLATE,
                     "heldout": {"path": f"{ext}/math_heldout.jsonl"}},
            "reading": {"source": "csv", "path": f"{ext}/reading.csv", "template": TEMPLATE},
            "mmlu": {"source": "hf", "path": "cais/mmlu", "name": "abstract_algebra", "split": "test",
                     "template": "{question}\nAnswer: {answer_letter}"},
        },
        "identification": {"skill": "math", "controls": ["reading", "mmlu"], "n_samples": 4, "seeds": [0, 1],
                           "max_length": 64, "k": {"5pct": 0.05}},
        "methods": ["mathneuro", "random"],
        "edits": {"x0": 0.0},
        "pruning": {"edit": "x0", "methods": ["mathneuro", "random"], "k": ["5pct"]},
        "scaling": {"edits": [], "methods": ["mathneuro"], "k": ["5pct"]},
        "consistency": {"n_samples": [4], "seeds": [0, 1], "k": "5pct"},
        "data_efficiency": {"edits": []},
        "evaluation": {"include_path": f"{ext}/tasks",
                       "suites": {"toy": {"tasks": ["toy_math", "toy_reading"], "limit": 2},
                                  "mine": {"tasks": ["my_task", "bpb_math"]}}},
    }


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(workdir, configfile, external inputs, the finished run's jobs)."""
    workdir = tmp_path_factory.mktemp("external")
    inputs = write_inputs(workdir / "ext")
    configfile = write_config(workdir / "external.yaml", config("ext"))
    jobs = fake_finished_run(workdir, configfile)
    assert planned(workdir, configfile) == []
    return workdir, configfile, inputs, jobs


def files_below(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def later(paths: list[Path]) -> None:
    """New modification times, later than every output's, on every file and folder."""
    stamp = time.time() + 60
    for path in paths:
        for file in [*files_below(path), *([path] if path.is_dir() else [])]:
            os.utime(file, (stamp, stamp))


def test_touching_every_external_input_plans_nothing(study):
    workdir, configfile, inputs, jobs = study
    later(list(inputs.values()))
    assert planned(workdir, configfile) == []


def test_a_copy_of_every_external_input_with_the_same_content_plans_nothing(study, tmp_path):
    """Data provisioned again: new files (new inodes and times), the same bytes."""
    workdir, configfile, inputs, _ = study
    ext = workdir / "ext"
    shutil.copytree(ext, tmp_path / "again")
    shutil.rmtree(ext)
    shutil.copytree(tmp_path / "again", ext, copy_function=shutil.copy)
    assert planned(workdir, configfile) == []


@pytest.mark.parametrize("keep_times", [True, False], ids=["times kept", "times lost"])
def test_the_study_copied_elsewhere_plans_nothing(study, tmp_path, keep_times):
    workdir, configfile, _, _ = study
    copy = tmp_path / "elsewhere"
    shutil.copytree(workdir, copy, symlinks=True, copy_function=shutil.copy2 if keep_times else shutil.copy)
    if not keep_times:
        later([copy / "results"])  # every output newer than Snakemake's records say, in no order
    assert planned(copy, copy / configfile.name) == []


@pytest.mark.parametrize("move", [False, True], ids=["copied", "moved"])
def test_every_external_input_at_another_path_with_the_same_bytes_plans_nothing(study, tmp_path, move):
    """The data, models and task files provisioned somewhere else (a cluster's scratch): the
    config names the new place, the bytes are the same, every job reads them by content."""
    workdir, configfile, inputs, _ = study
    copy = tmp_path / "study"
    shutil.copytree(workdir, copy, symlinks=True)
    shutil.copytree(copy / "ext", copy / "scratch" / "data", copy_function=shutil.copy)
    if move:
        shutil.rmtree(copy / "ext")
    elsewhere = write_config(copy / "elsewhere.yaml", config("scratch/data"))
    every = planned(copy, elsewhere, "--forceall")
    assert not [name for job in every for name in job.inputs if Path(name).is_relative_to("ext")]
    if not move:  # the user's task YAML names its data by an absolute path into ext/
        assert planned(copy, elsewhere) == []
        return
    (copy / "ext").mkdir()  # where that YAML's data was: the same bytes again
    shutil.copy(copy / "scratch" / "data" / "toy_reading_test.jsonl", copy / "ext")
    assert planned(copy, elsewhere) == []


def test_a_fresh_copy_of_the_workflow_plans_nothing(study, tmp_path):
    """Every file of the workflow newer than the outputs (a fresh clone): its scripts' times do
    not rerun anything (their code does: profiles/default and the rules' `code` params)."""
    workdir, configfile, _, _ = study
    assert planned(workdir, configfile, repo=fresh_copy(tmp_path)) == []


def change_one_byte(path: Path) -> None:
    """One byte changed, the size kept: of a text file its last letter or digit (a value in a
    record, the YAML's comment), of a binary one (weights, the biggest file of a folder) the last
    byte, which belongs to a tensor."""
    file = max(files_below(path), key=lambda p: p.stat().st_size)
    data = bytearray(file.read_bytes())
    if file.suffix in (".jsonl", ".csv", ".yaml"):
        at = max(i for i, byte in enumerate(data) if chr(byte) in "012345678abcdefghijklmnopqrstuvwxy")
        data[at] += 1
    else:
        data[-1] = (data[-1] + 1) % 256
    file.write_bytes(bytes(data))


def reads(name: Path, path: Path) -> bool:
    """Whether a job's input ``name`` (a link named by content, results/content/...) is ``path``,
    lies in it or holds it."""
    name, path = Path(os.path.realpath(name)), Path(os.path.realpath(path))
    return name == path or name.is_relative_to(path) or path.is_relative_to(name)


KINDS = ["json data file", "csv data file", "held-out file", "local_data file", "MMLU release folder",
         "local model folder", "GGUF file", "task YAML"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_changed_byte_reruns_exactly_the_jobs_that_read_it_and_what_follows(study, tmp_path, kind):
    workdir, configfile, inputs, _ = study
    copy = tmp_path / "study"
    shutil.copytree(workdir, copy, symlinks=True)
    every = planned(copy, copy / configfile.name, "--forceall")
    path = inputs[kind].relative_to(workdir)
    readers = {job for job in every if any(reads(copy / name, copy / path) for name in job.inputs)}
    assert readers, f"no job reads {path}"
    change_one_byte(copy / path)
    got = planned(copy, copy / configfile.name)
    assert set(got) == descendants(every, readers)


@pytest.mark.parametrize(("mode", "settles"), [([], True), (["--mode", "remote"], False)],
                         ids=["the planning Snakemake", "a cluster job's"])
def test_only_the_snakemake_that_plans_a_run_sets_a_later_time_back(study, tmp_path, mode, settles):
    """A cluster job parses the workflow again (`--mode remote`) while other jobs write outputs
    whose records the planning Snakemake has not yet updated: it sets no time back."""
    workdir, configfile, _, jobs = study
    copy = tmp_path / "study"
    shutil.copytree(workdir, copy, symlinks=True)
    output = copy / next(f for job in jobs for f in sorted(job.outputs) if f.endswith(".parquet"))
    later([output])  # as if a job had just rewritten it
    written = output.stat().st_mtime
    snakemake(copy, copy / configfile.name, "-n", *mode)
    assert (output.stat().st_mtime < written) == settles


def test_a_task_yaml_no_suite_names_reruns_nothing(study, tmp_path):
    workdir, configfile, _, _ = study
    copy = tmp_path / "study"
    shutil.copytree(workdir, copy, symlinks=True)
    change_one_byte(copy / "ext" / "tasks" / "other_task.yaml")
    assert planned(copy, copy / configfile.name) == []


@pytest.mark.parametrize("task", ["toy_math", "toy_reading"])
def test_a_changed_project_task_reruns_exactly_the_suites_that_evaluate_it(study, tmp_path, task):
    """The project's task files (mathneuro/lm_tasks) are content of the suites that use them,
    found from the config and the files, not listed here."""
    workdir, configfile, _, _ = study
    clone = fresh_copy(tmp_path)
    definition = clone / "mathneuro" / "lm_tasks" / "toy" / f"{task}.yaml"
    definition.write_text(definition.read_text() + "# changed\n")
    every = planned(workdir, configfile, "--forceall", repo=clone)
    suites = {s for s, spec in compose([configfile])["evaluation"]["suites"].items() if task in spec["tasks"]}
    makers = {job for job in every if job.rule == "suite_tasks" and any(o.endswith(f"tasks/{s}") for s in suites
                                                                         for o in job.outputs)}
    assert len(makers) == len(suites) >= 1
    assert set(planned(workdir, configfile, repo=clone)) == descendants(every, makers)


def fresh_copy(tmp_path: Path) -> Path:
    """The workflow copied as a fresh clone would be: every file newer than the outputs."""
    clone = tmp_path / "clone"
    ignore = shutil.ignore_patterns(".venv", ".git", "results", "logs", ".snakemake", "models", "__pycache__",
                                    "*.egg-info", ".pytest_cache")
    shutil.copytree(REPO, clone, ignore=ignore, copy_function=shutil.copy)
    later([clone])
    return clone


@pytest.mark.parametrize(("edit", "reruns"), [("# a comment\n", False), ("assert True\n", True)],
                         ids=["a comment", "a line of code"])
def test_a_scripts_code_reruns_its_rules_jobs_and_a_comment_does_not(study, tmp_path, edit, reruns):
    workdir, configfile, _, _ = study
    clone = fresh_copy(tmp_path)
    script = clone / "workflow_scripts" / "top_k.py"
    script.write_text(script.read_text() + edit)
    every = planned(workdir, configfile, "--forceall", repo=clone)
    expected = descendants(every, {job for job in every if job.rule == "top_k"}) if reruns else set()
    assert set(planned(workdir, configfile, repo=clone)) == expected


# Another value for each model key that does not name the model itself (schemas/config.schema.yaml)
OTHER_VALUES = {"dtype": "bfloat16", "device": "auto", "gpus": 1, "size_b": 0.5, "threads": 2,
                "collect_batch_size": 4, "eval_batch_size": 4}
IDENTITY = {"path", "revision", "gguf", "architecture", "plant"}  # another value is another model


def test_every_model_key_names_the_model_or_is_changed_below():
    import yaml

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    spec = schema["properties"]["models"]["additionalProperties"]
    assert set(spec["properties"]) == IDENTITY | set(OTHER_VALUES)


@pytest.mark.parametrize("key", [*OTHER_VALUES, "offline"])
def test_where_jobs_run_reruns_nothing_and_what_they_compute_reruns_that_models_jobs(study, tmp_path, key):
    """The settings of mathneuro.study.models.EXECUTION and `offline` say where and how fast jobs
    run: another value plans nothing. Every other key changes what the model's jobs compute: they
    rerun, and no job of the other model does."""
    import yaml

    from mathneuro.study.models import EXECUTION

    workdir, configfile, _, jobs = study
    changed = yaml.safe_load(configfile.read_text())
    if key == "offline":
        changed["offline"] = not changed.get("offline", False)
    else:
        assert changed["models"]["local"][key] != OTHER_VALUES[key]
        changed["models"]["local"][key] = OTHER_VALUES[key]
    got = planned(workdir, write_config(tmp_path / "changed.yaml", changed))
    if key == "offline" or key in EXECUTION:
        assert got == []
        return
    assert {job.wc.get("model") for job in got if job.rule not in ALWAYS} == {"local"}
