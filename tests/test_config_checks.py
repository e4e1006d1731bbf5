"""Checks of what a config names outside itself, made before any job (mathneuro.configs): data
files, template fields and the suites' lm-eval tasks; then the same on a finished study, where a
config Snakemake cannot build must fail the dry run rather than leave the old tables standing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from dag import ALWAYS, fake_finished_run, planned, snakemake, write_config

from mathneuro.configs import check_data, lm_eval_cache_file, lm_eval_task_names, unknown_tasks

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"

RECORD = {"question": "2 + 3?", "answer": "5"}


def jsonl(path: Path, *records) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def files(tmp: Path) -> dict[str, str]:
    """Data files of every kind, each holding RECORD (or nothing: empty, a folder without files)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "empty.jsonl").touch()
    (tmp / "no_header.csv").write_text("2 + 3?,5\n")
    (tmp / "header.csv").write_text("question,answer\n2 + 3?,5\n")
    pd.DataFrame([RECORD]).to_parquet(tmp / "one.parquet")
    (tmp / "empty_dir").mkdir()
    (tmp / "release").mkdir()
    (tmp / "release" / "a.csv").write_text("x")
    return {
        "json": jsonl(tmp / "one.jsonl", RECORD),
        "array": str((tmp / "array.json").write_text(json.dumps([RECORD])) and tmp / "array.json"),
        "glob": jsonl(tmp / "parts" / "a_test.jsonl", RECORD).replace("a_test", "*_test"),
        "empty": str(tmp / "empty.jsonl"),
        "missing": str(tmp / "nowhere" / "none.jsonl"),
        "csv": str(tmp / "no_header.csv"),
        "csv header": str(tmp / "header.csv"),
        "parquet": str(tmp / "one.parquet"),
        "empty dir": str(tmp / "empty_dir"),
        "release": str(tmp / "release"),
        "hub": jsonl(tmp / "hub" / "algebra" / "train.jsonl", {"problem": "x?", "solution": "y"}),
    }


T = "Question: {question}\nAnswer: {answer}"
MADE = "results/data/synthetic/math/train.jsonl"

# (spec or local_data by file key, made files) -> the words the one message names; None: no problem
DATA_CASES = {
    "json file": ({"source": "json", "path": "json", "template": T}, None),
    "JSON array": ({"source": "json", "path": "array", "template": T}, None),
    "glob": ({"source": "json", "path": "glob", "template": T}, None),
    "subject of a file record": ({"source": "json", "path": "glob", "template": "{subject}: {question}"}, None),
    "csv with columns": ({"source": "csv", "path": "csv", "columns": ["question", "answer"], "template": T}, None),
    "csv with a header": ({"source": "csv", "path": "csv header", "template": T}, None),
    "parquet": ({"source": "parquet", "path": "parquet", "template": T}, None),
    "missing file": ({"source": "json", "path": "missing", "template": T}, ["datasets.d.path", "none.jsonl", "does not exist"]),
    "empty file": ({"source": "json", "path": "empty", "template": T}, ["datasets.d.path", "empty.jsonl", "is empty"]),
    "glob matching nothing": ({"source": "csv", "path": "nothing*", "template": T}, ["datasets.d.path", "nothing*", "matches no file"]),
    "missing template field": ({"source": "json", "path": "json", "template": "{questionx}"},
                               ["datasets.d.template", "'questionx'", "one.jsonl"]),
    "missing field in csv": ({"source": "csv", "path": "csv", "columns": ["q", "a"], "template": "{question} {a}"},
                             ["datasets.d.template", "'question'", "no_header.csv"]),
    "missing field in parquet": ({"source": "parquet", "path": "parquet", "template": "{text}"},
                                 ["datasets.d.template", "'text'", "one.parquet"]),
    "missing id field": ({"source": "json", "path": "json", "template": T, "id_field": "uid"},
                         ["datasets.d.id_field", "'uid'"]),
    "a file the workflow writes": ({"source": "json", "path": MADE, "template": T}, None),
    "its missing field": ({"source": "json", "path": MADE, "template": "{questionx}"}, ["'questionx'", MADE]),
    "written without records": ({"source": "json", "path": "results/data/synthetic/math_reworded/train.jsonl",
                                 "template": T}, ["math_reworded/train.jsonl", "without records"]),
    "hub data set without local copy": ({"source": "hf", "path": "openai/gsm8k", "name": "main", "template": "{x}"}, None),
    "local copy": ({"source": "hf", "path": "hendrycks", "name": "algebra", "template": "{problem} {solution}"}, None),
    "local copy, missing field": ({"source": "hf", "path": "hendrycks", "name": "algebra", "template": "{question}"},
                                  ["datasets.d.template", "'question'", "train.jsonl"]),
    "local copy of a config it lacks": ({"source": "hf", "path": "hendrycks", "name": ["algebra", "geometry"],
                                         "template": "{problem}"}, ["local_data.hendrycks.files.train", "geometry"]),
    "local copy without the split": ({"source": "hf", "path": "hendrycks", "name": "algebra", "split": "test",
                                      "template": "{problem}"}, ["datasets.d", "split 'test'"]),
}

LOCAL_CASES = {
    "release folder": ({"mmlu": {"mmlu_release": "release", "aliases": ["cais/mmlu"]}}, None),
    "missing release folder": ({"mmlu": {"mmlu_release": "missing"}}, ["local_data.mmlu.mmlu_release", "none.jsonl"]),
    "empty release folder": ({"mmlu": {"mmlu_release": "empty dir"}}, ["local_data.mmlu.mmlu_release", "empty folder"]),
    "missing file": ({"gsm": {"files": {"train": "missing", "test": "json"}}}, ["local_data.gsm.files.train", "none.jsonl"]),
    "empty file in a list": ({"gsm": {"files": {"test": ["json", "empty"]}}}, ["local_data.gsm.files.test", "is empty"]),
    "a name pattern nothing matches": ({"x": {"files": {"test": "{dir}/nothing/{name}.jsonl"}}},
                                       ["local_data.x.files.test", "matches no file"]),
}


def resolve(value, paths: dict[str, str], tmp: Path):
    """A case's file keys replaced by their paths (a pattern's folder by tmp)."""
    if isinstance(value, str):
        if value in paths:
            return paths[value]
        return value.replace("{dir}", str(tmp)) if "{dir}" in value else (str(tmp / value) if "*" in value else value)
    if isinstance(value, list):
        return [resolve(v, paths, tmp) for v in value]
    return value


def made_files():
    return {MADE: dict(RECORD, id="train:0", target=5), "results/data/synthetic/math_reworded/train.jsonl": None}


@pytest.mark.parametrize("case", DATA_CASES)
def test_a_data_spec_names_readable_files_and_fields_of_its_first_record(tmp_path, case):
    spec, named = DATA_CASES[case]
    paths = files(tmp_path)
    spec = {key: resolve(value, paths, tmp_path) if key == "path" else value for key, value in spec.items()}
    hub = str(Path(paths["hub"]).parent.parent / "{name}" / "train.jsonl")
    local = {"hendrycks": {"files": {"train": hub}}}
    problems = check_data({"d": spec}, local if spec["source"] == "hf" else {}, made_files())
    if named is None:
        assert problems == []
    else:
        assert len(problems) == 1, problems
        assert all(word in problems[0] for word in named), problems[0]


@pytest.mark.parametrize("case", LOCAL_CASES)
def test_every_file_local_data_names_exists_and_is_not_empty(tmp_path, case):
    local, named = LOCAL_CASES[case]
    paths = {**files(tmp_path), "missing": str(tmp_path / "nowhere" / "none.jsonl")}
    local = {hub: {key: ({s: resolve(p, paths, tmp_path) for s, p in value.items()} if key == "files"
                         else resolve(value, paths, tmp_path)) for key, value in entry.items()}
             for hub, entry in local.items()}
    problems = check_data({}, local)
    if named is None:
        assert problems == []
    else:
        assert len(problems) == 1 and all(word in problems[0] for word in named), problems


def test_every_unknown_task_of_every_suite_is_named():
    suites = {"a": {"tasks": ["gsm8k_cot", "no_such_task"]}, "b": {"tasks": ["toy_math", "mmlu_typo"]}}
    problems = unknown_tasks(suites, {"gsm8k_cot", "toy_math"}.__contains__)
    assert len(problems) == 2
    assert "evaluation.suites.a.tasks" in problems[0] and "'no_such_task'" in problems[0]
    assert "evaluation.suites.b.tasks" in problems[1] and "'mmlu_typo'" in problems[1]


def test_lm_evals_names_are_read_from_the_cache_and_the_projects_and_a_users_tasks_are_added(tmp_path):
    from mathneuro.tasks import project_task_names

    cache = lm_eval_cache_file(tmp_path)
    assert cache.parent == tmp_path and "lm_eval_tasks-" in cache.name
    cache.write_text(json.dumps(["planted_task"]))  # a cache is trusted: lm-eval is not indexed
    assert lm_eval_task_names(cache_dir=tmp_path) == {"planted_task", *project_task_names()}
    user = tmp_path / "user_tasks"
    user.mkdir()
    (user / "mine.yaml").write_text("task: my_own_task\ndataset_path: json\noutput_type: loglikelihood\n"
                                    "doc_to_text: q\ndoc_to_target: a\n")
    assert lm_eval_task_names(str(user), cache_dir=tmp_path) == {"planted_task", "my_own_task", *project_task_names()}


# --- The workflow: bad input fails the dry run before any job, in a finished study too -------------


def extra_control(c, path="nowhere/none.jsonl", template="{q}"):
    c["datasets"]["extra"] = {"source": "json", "path": path, "template": template}
    c["identification"]["controls"] = [*c["identification"]["controls"], "extra"]


BAD = {
    "a control whose file does not exist": (extra_control, "nowhere/none.jsonl"),
    "a template field not in the data": (lambda c: c["datasets"]["math"].update(template="{questionx} {answer}"),
                                         "'questionx'"),
    "a task lm-eval does not know": (lambda c: c["evaluation"]["suites"].update(lm={"tasks": ["no_such_lm_eval_task"]}),
                                     "'no_such_lm_eval_task'"),
}


@pytest.fixture(scope="module")
def finished_tiny(tmp_path_factory):
    """A finished tiny study (faked: every output there, recorded by Snakemake) and its jobs."""
    workdir = tmp_path_factory.mktemp("finished_tiny")
    jobs = fake_finished_run(workdir, TINY)
    assert planned(workdir, TINY) == []
    return workdir, jobs


def stamps(workdir: Path) -> dict[str, int]:
    return {str(p.relative_to(workdir)): p.stat().st_mtime_ns for p in (workdir / "results").rglob("*")}


@pytest.mark.workflow
@pytest.mark.parametrize("fresh", [False, True], ids=["finished", "fresh"])
@pytest.mark.parametrize("case", BAD)
def test_a_config_that_cannot_be_built_fails_the_dry_run_naming_what_is_missing(finished_tiny, tmp_path, case, fresh):
    from mathneuro.configs import compose

    change, named = BAD[case]
    config = compose([TINY])
    change(config)
    configfile = write_config(tmp_path / "bad.yaml", config)
    workdir = tmp_path / "fresh" if fresh else finished_tiny[0]
    before = stamps(workdir) if not fresh else {}
    done = snakemake(workdir, configfile, "-n", check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and named in output, output[-2000:]
    assert "Nothing to be done" not in output
    assert stamps(workdir) == before if not fresh else not (workdir / "results").exists()


@pytest.mark.workflow
def test_a_control_whose_file_exists_plans_exactly_the_new_work(finished_tiny, tmp_path):
    from mathneuro.configs import compose

    workdir, jobs = finished_tiny
    data = workdir / "data" / "extra.jsonl"
    jsonl(data, *({"q": f"Who wrote note {i}?", "a": "Ann"} for i in range(4)))
    config = compose([TINY])
    extra_control(config, path="data/extra.jsonl", template="{q}\nAnswer: {a}")
    configfile = write_config(tmp_path / "extra.yaml", config)
    finished = {f for job in jobs for f in job.outputs}
    every = planned(workdir, configfile, "--forceall")
    expected = {j for j in every if j.rule in ALWAYS or j.outputs - finished}
    got = planned(workdir, configfile)
    assert set(got) == expected
    rules = {j.rule for j in got}
    assert {"collect_activations", "top_k", "select_set", "evaluate"} <= rules
    assert all("extra" in str(j.outputs) for j in got if j.rule not in ALWAYS)


# --- bits-per-byte tasks: each names a data set whose held-out split is not its identification split --

BPB_DATASETS = {
    "none": (["gsm8k_cot", "toy_math"], []),
    "in order, others skipped": (["bpb_math", "mmlu", "bpb_non_math"], ["math", "non_math"]),
    "only the prefix counts": (["mmlu_bpb", "bpb_bpb_x"], ["bpb_x"]),
}


@pytest.mark.parametrize("case", BPB_DATASETS)
def test_the_data_sets_of_a_suites_bpb_tasks(case):
    from mathneuro.configs import bpb_datasets

    tasks, expected = BPB_DATASETS[case]
    assert bpb_datasets(tasks) == expected


BPB_SETS = {
    "math": {"source": "hf", "path": "openai/gsm8k", "name": "main", "split": "train", "template": T},
    "toy": {"source": "synthetic", "task": "math", "n_train": 4, "n_test": 2},  # split train by default
    "own file": {"source": "json", "path": "own.jsonl", "heldout": {"path": "held_out.jsonl"}, "template": T},
    "own share": {"source": "json", "path": "own.jsonl", "heldout": {"fraction": 0.2}, "template": T},
    "bare file": {"source": "json", "path": "own.jsonl", "template": T},
}

# (suites' tasks, held-out split) -> the words each problem names, in order
BPB_CASES = {
    "good config": ({"a": ["bpb_math", "bpb_toy", "bpb_own file", "bpb_own share", "gsm8k_cot"]}, "test", []),
    "a file without held-out texts": ({"a": ["bpb_own file", "bpb_bare file"]}, "test",
                                      [["evaluation.suites.a: bpb_bare file", "datasets.bare file",
                                        "no held-out texts"]]),
    "unknown data set": ({"a": ["gsm8k_cot", "bpb_nope"]}, "test",
                         [["evaluation.suites.a: bpb_nope", "names no data set", "'math'", "'toy'"]]),
    "held-out split is the identification split": ({"a": ["bpb_math"]}, "train",
                                                   [["evaluation.suites.a: bpb_math", "'train'", "identification"]]),
    "a synthetic default split": ({"a": ["bpb_own file"], "b": ["bpb_toy"]}, "train",
                                  [["evaluation.suites.b: bpb_toy", "'train'", "identification"]]),
    "every problem of every suite": ({"a": ["bpb_math", "bpb_x"], "b": ["bpb_y"]}, "train",
                                     [["suites.a: bpb_math", "'train'"], ["suites.a: bpb_x", "names no data set"],
                                      ["suites.b: bpb_y", "names no data set"]]),
}


@pytest.mark.parametrize("case", BPB_CASES)
def test_a_bpb_task_names_a_data_set_with_held_out_texts(case):
    from mathneuro.configs import bpb_problems

    tasks, split, named = BPB_CASES[case]
    problems = bpb_problems({label: {"tasks": t} for label, t in tasks.items()}, BPB_SETS, split)
    assert len(problems) == len(named), problems
    for problem, words in zip(problems, named):
        assert all(word in problem for word in words), problem


# --- GGUF models: a local file must exist and hold an architecture transformers reads -----------------


def write_gguf(path: Path, architecture: str) -> None:
    """A GGUF file whose header names `architecture`, with one small tensor (as tests/test_gguf.py)."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), architecture)
    writer.add_tensor("token_embd.weight", np.zeros((2, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# model spec ("{dir}": a folder holding llama.gguf and rwkv.gguf) -> the words the one problem names; None: none
GGUF_CASES = {
    "no gguf": ({"path": "toy"}, None),
    "toy": ({"path": "toy", "gguf": "m.gguf"}, ["models.m", "`gguf`", "'toy'"]),
    "random": ({"path": "random", "gguf": "m.gguf"}, ["models.m", "'random'"]),
    "missing file": ({"path": "{dir}", "gguf": "absent.Q4.gguf"}, ["models.m", "absent.Q4.gguf", "does not exist"]),
    "an architecture transformers cannot read": ({"path": "{dir}", "gguf": "rwkv.gguf"},
                                                 ["models.m", "rwkv.gguf", "'rwkv6'"]),
    "llama": ({"path": "{dir}", "gguf": "llama.gguf"}, None),
    "a hub repository, checked by its job": ({"path": "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF",
                                              "gguf": "rwkv.gguf"}, None),
}


@pytest.mark.parametrize("case", GGUF_CASES)
def test_a_gguf_model_names_a_file_transformers_reads(tmp_path, case):
    from mathneuro.configs import gguf_problems

    spec, named = GGUF_CASES[case]
    write_gguf(tmp_path / "llama.gguf", "llama")
    write_gguf(tmp_path / "rwkv.gguf", "rwkv6")
    spec = {**spec, "path": spec["path"].replace("{dir}", str(tmp_path)), "size_b": 0.001}
    problems = gguf_problems({"ok": {"path": str(tmp_path), "gguf": "llama.gguf"}, "m": spec})
    if named is None:
        assert problems == []
    else:
        assert len(problems) == 1 and all(word in problems[0] for word in named), problems


# --- Settings that leave an analysis empty: refused, or the analysis skipped ------------------------


def analysis_lists(config: dict) -> list[str]:
    """Every list-valued key of the analyses' sections (and `methods`), as dotted keys."""
    sections = ["methods", "pruning", "scaling", "consistency", "data_efficiency", "subskills", "finetuning"]
    keys = ["methods"] if isinstance(config.get("methods"), list) else []
    for section in sections[1:]:
        keys += [f"{section}.{key}" for key, value in (config.get(section) or {}).items() if isinstance(value, list)]
    return keys


def schema_refuses_empty(key: str) -> bool:
    """Whether the schema's own rule for ``key`` (dotted) refuses an empty list, read from the
    schema alone: its sub-schema, with the schema's definitions, checked against []."""
    import jsonschema
    import yaml

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    part = schema
    for name in key.split("."):
        part = part["properties"][name]
    return not jsonschema.Draft7Validator({**part, "definitions": schema["definitions"]}).is_valid([])


@pytest.mark.parametrize("key", analysis_lists(__import__("mathneuro.configs", fromlist=["compose"]).compose([TINY])))
def test_an_empty_list_is_refused_naming_it_or_accepted_as_that_part_skipped(key):
    """Where the schema's rule for the key refuses [], validation fails naming the key; elsewhere
    the config validates, and the cross-reference checks name nothing but the key's section (the
    run with every such list empty, below, shows that nothing crashes)."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    from mathneuro.configs import compose
    from mathneuro.study import Study

    config = compose([TINY])
    section, _, name = key.partition(".")
    (config[section].__setitem__(name, []) if name else config.__setitem__(section, []))
    if schema_refuses_empty(key):
        with pytest.raises(WorkflowError, match=name or section):
            validate(config, str(REPO / "schemas" / "config.schema.yaml"))
        return
    validate(config, str(REPO / "schemas" / "config.schema.yaml"))
    problems = Study(config).problems()
    assert all(key.split(".")[0] in p for p in problems), problems


@pytest.mark.workflow
def test_a_study_with_every_analysis_it_may_skip_skipped_runs_to_empty_tables(tiny_run, tmp_path):
    """Every list the schema lets be empty, empty at once: the unedited model is evaluated, and
    aggregate and plots write every table (without rows) and figure ("no ... in this study"). Run
    in a copy of the finished tiny study, whose jobs it shares: what it runs anew is what differs."""
    import shutil

    from snakemake.utils import validate

    from mathneuro.analyses import FIGURES, TABLES
    from mathneuro.configs import compose

    config = compose([TINY])
    config.pop("subskills")
    for key in analysis_lists(config):
        section, _, name = key.partition(".")
        if schema_refuses_empty(key):
            continue
        (config[section].__setitem__(name, []) if name else config.__setitem__(section, []))
    validate(config, str(REPO / "schemas" / "config.schema.yaml"))
    assert config["pruning"]["k"] == [] and config["consistency"]["n_samples"] == []
    configfile = write_config(tmp_path / "off.yaml", config)
    shutil.copytree(tiny_run, tmp_path / "work", symlinks=True)
    snakemake(tmp_path / "work", configfile, "--cores", "2")
    tables = tmp_path / "work" / "results" / "tables" / config["study"]
    skipped = {"pruning", "scaling", "data_efficiency", "consistency", "layer_overlap", "subskills", "subskill_overlap",
               "finetuning", "localization"}  # localization: the tiny config plants no skill
    for name in TABLES:  # the sets at consistency.k are still made: layers and share count them
        assert pd.read_parquet(tables / f"{name}.parquet").empty == (name in skipped), name
    assert all((tables / "plots" / f"{figure}.png").is_file() for figure in FIGURES)
    import subprocess
    import sys

    printed = subprocess.run([sys.executable, "-m", "mathneuro.summary", str(tables)], capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr


# --- Records: every one of a data file holds the template's fields, checked once per content -------


def test_a_later_record_without_a_template_field_is_named_by_its_line(tmp_path, monkeypatch):
    from mathneuro import configs
    from mathneuro.freshness import StoredCache

    monkeypatch.setattr(configs, "_RECORD_CHECKS", StoredCache("checks.json", tmp_path / "cache"))
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(RECORD) + "\n\n" + json.dumps(RECORD) + "\n" + json.dumps({"question": "no answer"}) + "\n")
    spec = {"source": "json", "path": str(path), "template": "{question} {answer}"}
    problems = check_data({"math": spec}, {})
    assert len(problems) == 1 and "'answer'" in problems[0] and "record 3 (line 4)" in problems[0], problems
    reads = []
    original = configs.__dict__.get("_record_problems")
    import mathneuro.records as records

    real = records.read_records
    monkeypatch.setattr(records, "read_records", lambda *a, **k: reads.append(a) or real(*a, **k))
    assert check_data({"math": spec}, {}) == problems and reads == []  # the verdict of this content, kept
    path.write_text(json.dumps(RECORD) + "\n")
    assert check_data({"math": spec}, {}) == [] and len(reads) == 1  # new content: read again
    assert original is not None


# --- Where models, GGUF files, data sets and task folders are: here, or in the hub's cache ----------


def hub_entry(cache: Path, kind: str, repo: str, file: str) -> None:
    """An entry of a Hugging Face hub cache, as snakemake prefetch leaves it."""
    root = cache / f"{kind}s--{repo.replace('/', '--')}"
    (root / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (root / "snapshots" / ("0" * 40) / file).touch()
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("0" * 40)


def models_part(specs: dict, offline: bool):
    from mathneuro.study import Models

    base = {"revision": None, "dtype": "float32", "device": "cpu", "gpus": 0, "size_b": 0.001, "threads": 1}
    return Models({label: {**base, **spec} for label, spec in specs.items()}, offline=offline)


# (model spec, offline) -> the words the problem names (None: no problem); the cache holds org/cached
# (config.json) and org/quantized (tiny.gguf)
LOCATIONS = {
    "a local folder that is not there": ({"path": "./no/such/model"}, False, ["models.m.path", "no/such/model"]),
    "a local folder that is there": ({"path": "{tmp}"}, True, None),
    "a hub model, online": ({"path": "org/absent"}, False, None),
    "a hub model, offline, cached": ({"path": "org/cached"}, True, None),
    "a hub model, offline, not cached": ({"path": "org/absent"}, True,
                                         ["models.m.path", "org/absent", "{cache}", "snakemake prefetch"]),
    "a GGUF file in a folder that is not there": ({"path": "../no/folder", "gguf": "m.gguf"}, False,
                                                  ["models.m.path", "no/folder"]),
    "a GGUF file of a hub repository, offline, cached": ({"path": "org/quantized", "gguf": "tiny.gguf"}, True, None),
    "a GGUF file of a hub repository, offline, not cached": ({"path": "org/quantized", "gguf": "other.gguf"}, True,
                                                            ["models.m.gguf", "other.gguf", "{cache}"]),
}


@pytest.mark.parametrize("case", LOCATIONS)
def test_a_model_that_is_neither_here_nor_reachable_is_named_with_where_it_was_looked_for(tmp_path, monkeypatch,
                                                                                           case):
    cache = tmp_path / "hub"
    hub_entry(cache, "model", "org/cached", "config.json")
    hub_entry(cache, "model", "org/quantized", "tiny.gguf")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    spec, offline, named = LOCATIONS[case]
    spec = {k: v.format(tmp=tmp_path) for k, v in spec.items()}
    models = models_part({"m": spec}, offline)
    problems = models.location_problems() + [p for p in [models.cache_problem("m")] if p]
    if named is None:
        assert problems == []
    else:
        assert len(problems) == 1 and all(w.format(cache=cache) in problems[0] for w in named), problems


def test_a_hub_data_set_offline_must_be_cached_or_local_and_a_task_folder_must_be_there(tmp_path, monkeypatch):
    from mathneuro.study import Data, Suites

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    hub_entry(tmp_path / "hub", "dataset", "org/cached", "README.md")
    config = {"datasets": {"a": {"source": "hf", "path": "org/cached"}, "b": {"source": "hf", "path": "org/absent"},
                           "c": {"source": "hf", "path": "org/local"}},
              "local_data": {"org/local": {"files": {"train": "x.jsonl"}, "aliases": []}}}
    data = Data(config)
    assert data.cache_problem("a", offline=True) is None and data.cache_problem("c", offline=True) is None
    assert data.cache_problem("b", offline=False) is None
    problem = data.cache_problem("b", offline=True)
    assert "datasets.b.path" in problem and "org/absent" in problem and str(tmp_path / "hub") in problem
    evaluation = {"suites": {"s": {"tasks": ["toy_math"]}}, "include_path": str(tmp_path / "missing"),
                  "heldout_split": "test", "skill_tasks": None}
    problems = Suites(evaluation, data, "math").input_problems(known_task=lambda task: True)
    assert problems and "evaluation.include_path" in problems[0] and "missing" in problems[0]


@pytest.mark.workflow
def test_an_offline_hub_model_not_in_the_cache_stops_every_target_but_prefetch(finished_tiny, tmp_path):
    """The dry run fails naming the model and the cache, before any job and deleting nothing;
    `snakemake prefetch`, which is how the model gets there, still plans."""
    from mathneuro.configs import compose

    workdir, _ = finished_tiny
    config = compose([TINY])
    config["offline"] = True
    config["models"]["toy"]["path"] = "org/not-fetched"
    configfile = write_config(tmp_path / "offline.yaml", config)
    before = stamps(workdir)
    done = snakemake(workdir, configfile, "-n", check=False)
    assert done.returncode != 0 and "org/not-fetched" in done.stdout + done.stderr
    assert "snakemake prefetch" in done.stdout + done.stderr and stamps(workdir) == before
    assert {j.rule for j in planned(workdir, configfile, "prefetch")} == {"prefetch"}
