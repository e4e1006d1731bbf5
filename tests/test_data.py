"""Tests for mathneuro.data: dataset specs -> Texts."""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

import mathneuro
from mathneuro.data import Texts, load_texts, validate_spec

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).parents[1] / ".." / "shared" / "data"
TINY = REPO / "tests" / "configs" / "tiny.yaml"
CONFIG_SCHEMA = REPO / "schemas" / "config.schema.yaml"
GSM8K = SHARED_DATA / "gsm8k" / "train.jsonl"
MMLU = SHARED_DATA / "mmlu"
GSM8K_TEMPLATE = "Question: {question}\nAnswer: {answer}"
MMLU_TEMPLATE = "{question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {answer}"
MMLU_COLUMNS = ["question", "A", "B", "C", "D", "answer"]

needs_shared_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason=f"shared benchmark data folder {SHARED_DATA} is absent"
)


def gsm8k_spec(**extra) -> dict:
    """A GSM8K spec over the shared train split."""
    return {"source": "json", "path": str(GSM8K), "template": GSM8K_TEMPLATE, **extra}


def mmlu_spec(split: str = "test", **extra) -> dict:
    """An MMLU spec over every subject's CSV of one split."""
    return {
        "source": "csv",
        "path": str(MMLU / split / f"*_{split}.csv"),
        "columns": MMLU_COLUMNS,
        "template": MMLU_TEMPLATE,
        **extra,
    }


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write records as JSON lines and return the path."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


RECORDS = [{"q": f"question {i}", "a": str(i), "uid": f"u{i}"} for i in range(10)]


# --------------------------------------------------------------------------- real data


@needs_shared_data
def test_gsm8k_all_records_in_order():
    texts = load_texts(gsm8k_spec())
    assert len(texts) == 7473
    assert texts[0].startswith("Question: Natalia sold clips")
    assert "\nAnswer: " in texts[0] and texts[0].rstrip().endswith("#### 72")
    assert texts.ids[:2] == ["train.jsonl:0", "train.jsonl:1"]
    assert len(set(texts.ids)) == len(texts)


@needs_shared_data
def test_gsm8k_sampling_with_replacement_is_seeded():
    first = load_texts(gsm8k_spec(n=64, seed=0))
    again = load_texts(gsm8k_spec(n=64, seed=0))
    other = load_texts(gsm8k_spec(n=64, seed=1))
    assert len(first) == 64
    assert list(first) == list(again) and first.ids == again.ids
    assert first.ids != other.ids


@needs_shared_data
def test_gsm8k_duplicates_are_visible_in_ids():
    texts = load_texts(gsm8k_spec(n=7473, seed=3))
    assert len(set(texts.ids)) < len(texts)  # with replacement, ~37% repeats
    by_id = {}
    for text_id, text in zip(texts.ids, texts):
        assert by_id.setdefault(text_id, text) == text


@needs_shared_data
def test_mmlu_glob_adds_subject_and_formats():
    texts = load_texts(mmlu_spec(template="[{subject}] " + MMLU_TEMPLATE))
    assert len(texts) > 14000
    subjects = {text_id.split(":")[0] for text_id in texts.ids}
    assert len(subjects) == 57
    assert texts[0].startswith("[abstract_algebra] Find the degree")
    assert texts[0].endswith("Answer: B")
    assert texts.ids[0] == "abstract_algebra_test.csv:0"


@needs_shared_data
def test_mmlu_dev_sample():
    texts = load_texts(mmlu_spec("dev", n=20, seed=0, replace=False))
    assert len(texts) == 20 and len(set(texts.ids)) == 20
    assert all(t.split("\n")[-1] in {f"Answer: {c}" for c in "ABCD"} for t in texts)
    assert len(load_texts(mmlu_spec("dev"))) == 57 * 5


# --------------------------------------------------------------------------- sampling


def test_sampling_without_replacement_is_unique_and_seeded(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS)
    spec = {"source": "json", "path": str(path), "template": "{q}", "n": 10, "replace": False, "seed": 5}
    texts = load_texts(spec)
    assert sorted(texts.ids) == sorted(f"d.jsonl:{i}" for i in range(10))
    assert texts.ids == load_texts(spec).ids
    assert texts.ids != [f"d.jsonl:{i}" for i in range(10)]  # shuffled


def test_sampling_without_replacement_rejects_n_above_size(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS)
    with pytest.raises(ValueError, match="n=11 > 10"):
        load_texts({"source": "json", "path": str(path), "template": "{q}", "n": 11, "replace": False})


def test_with_replacement_may_exceed_size_and_defaults_seed(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS)
    spec = {"source": "json", "path": str(path), "template": "{q}", "n": 25}
    texts = load_texts(spec)
    assert len(texts) == 25 and len(set(texts.ids)) <= 10
    assert texts.ids == load_texts({**spec, "seed": 0}).ids


def test_id_field(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS)
    texts = load_texts({"source": "json", "path": str(path), "template": "{q}", "id_field": "uid"})
    assert texts.ids[:3] == ["u0", "u1", "u2"]
    with pytest.raises(ValueError, match=r"'nope'.*\['a', 'q', 'subject', 'uid'\]"):
        load_texts({"source": "json", "path": str(path), "template": "{q}", "id_field": "nope"})


# --------------------------------------------------------------------------- file formats


def test_csv_with_header(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text('q,a\n"multi\nline, quoted",1\nNA,None\n', encoding="utf-8")
    texts = load_texts({"source": "csv", "path": str(path), "template": "{q}|{a}"})
    assert list(texts) == ["multi\nline, quoted|1", "NA|None"]  # strings kept verbatim


def test_csv_without_header_needs_matching_columns(tmp_path):
    path = tmp_path / "x_val.csv"
    path.write_text("what?,yes\nwhy?,no\n", encoding="utf-8")
    texts = load_texts({"source": "csv", "path": str(path), "columns": ["q", "a"], "template": "{subject}: {q} {a}"})
    assert list(texts) == ["x: what? yes", "x: why? no"]
    with pytest.raises(ValueError, match="row 1 has 2 values but 'columns' names 3"):
        load_texts({"source": "csv", "path": str(path), "columns": ["q", "a", "b"], "template": "{q}"})


def test_json_lines_and_json_array(tmp_path):
    lines = write_jsonl(tmp_path / "l.jsonl", RECORDS[:3])
    array = tmp_path / "a.json"
    array.write_text(json.dumps(RECORDS[:3]), encoding="utf-8")
    spec = {"source": "json", "template": "{q}={a}"}
    assert list(load_texts({**spec, "path": str(lines)})) == ["question 0=0", "question 1=1", "question 2=2"]
    assert list(load_texts({**spec, "path": str(array)})) == ["question 0=0", "question 1=1", "question 2=2"]


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist([{"text": "hello", "k": 1}, {"text": "world", "k": 2}]), path)
    texts = load_texts({"source": "parquet", "path": str(path)})  # default template "{text}"
    assert list(texts) == ["hello", "world"] and texts.ids == ["p.parquet:0", "p.parquet:1"]


def test_glob_reads_files_in_sorted_order(tmp_path):
    write_jsonl(tmp_path / "b_test.jsonl", [{"text": "b0"}])
    write_jsonl(tmp_path / "a_test.jsonl", [{"text": "a0"}, {"text": "a1"}])
    texts = load_texts({"source": "json", "path": str(tmp_path / "*_test.jsonl"), "template": "{subject}/{text}"})
    assert list(texts) == ["a/a0", "a/a1", "b/b0"]
    assert texts.ids == ["a_test.jsonl:0", "a_test.jsonl:1", "b_test.jsonl:0"]


def test_base_dir_anchors_relative_paths(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", RECORDS[:2])
    texts = load_texts({"source": "json", "path": "d.jsonl", "template": "{q}"}, base_dir=tmp_path)
    assert list(texts) == ["question 0", "question 1"]


# --------------------------------------------------------------------------- other sources


def test_hf_local_folder_offline(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    folder = tmp_path / "tiny"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", RECORDS)
    spec = {"source": "hf", "path": str(folder), "split": "train", "template": "Q: {q} A: {a}",
            "cache_dir": str(tmp_path / "cache"), "n": 6, "seed": 2}
    texts = load_texts(spec)
    assert len(texts) == 6 and all(t.startswith("Q: question ") for t in texts)
    assert all(i.startswith("train:") for i in texts.ids)
    for text_id, text in zip(texts.ids, texts):
        assert text == f"Q: question {text_id.split(':')[1]} A: {text_id.split(':')[1]}"
    assert texts.ids == load_texts(spec).ids


def fake_generate(task, *, n_train, n_test, seed):
    """Stand-in for mathneuro.synthetic.generate with the same signature."""
    make = lambda split, n: [{"text": f"{task}-{split}-{seed}-{i}"} for i in range(n)]
    return {"train": make("train", n_train), "test": make("test", n_test)}


def test_synthetic_source_passes_arguments(monkeypatch):
    fake = types.SimpleNamespace(generate=fake_generate)
    monkeypatch.setitem(sys.modules, "mathneuro.synthetic", fake)
    monkeypatch.setattr(mathneuro, "synthetic", fake, raising=False)
    base = {"source": "synthetic", "task": "add", "n_train": 4, "n_test": 3, "template": "{text}"}
    texts = load_texts({**base, "split": "test", "data_seed": 7})
    assert list(texts) == ["add-test-7-0", "add-test-7-1", "add-test-7-2"]
    assert texts.ids == ["test:0", "test:1", "test:2"]
    drawn = load_texts({**base, "n": 5, "seed": 1})
    assert len(drawn) == 5 and all(t.startswith("add-train-0-") for t in drawn)


def test_synthetic_real_generator_defaults_to_training_text():
    synthetic = pytest.importorskip("mathneuro.synthetic")
    spec = {"source": "synthetic", "task": "math", "n_train": 20, "n_test": 5, "data_seed": 0}
    records = synthetic.generate("math", n_train=20, n_test=5, seed=0)["train"]
    texts = load_texts(spec)
    assert list(texts) == [synthetic.training_text("math", r) for r in records]
    assert load_texts({**spec, "id_field": "id"}).ids == [r["id"] for r in records]
    formatted = load_texts({**spec, "split": "test", "template": "{question}", "n": 8, "seed": 4})
    assert len(formatted) == 8 and set(formatted) <= {r["question"] for r in synthetic.generate(
        "math", n_train=20, n_test=5, seed=0)["test"]}


# --------------------------------------------------------------------------- Texts


def test_texts_is_a_frozen_sequence(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS[:3])
    spec = {"source": "json", "path": str(path), "template": "{q}"}
    texts = load_texts(spec)
    assert isinstance(texts, Sequence) and isinstance(texts, Texts)
    assert texts[1] == "question 1" and texts[-1] == "question 2"
    assert texts[:2] == ["question 0", "question 1"]
    assert isinstance(texts.ids, list) and "question 1" in texts
    with pytest.raises(dataclasses.FrozenInstanceError):
        texts.ids = []  # type: ignore[misc]
    spec["n"] = 99  # the stored spec is a copy, read-only
    assert "n" not in texts.spec
    with pytest.raises(TypeError):
        texts.spec["n"] = 1  # type: ignore[index]
    assert "n=3" in repr(texts)


# --------------------------------------------------------------------------- errors


REJECTED = [
    (["not", "a", "mapping"], "must be a mapping"),
    ({"path": "x.json"}, "'source' must be one of"),
    ({"source": "xml", "path": "x.xml"}, "'source' must be one of .* got 'xml'"),
    ({"source": "json"}, "'path' must be a file or a glob, got None"),
    ({"source": "csv", "path": ""}, "'path' must be a file or a glob, got ''"),
    ({"source": "parquet", "path": None}, "'path' must be a file or a glob, got None"),
    ({"source": "hf"}, "'path' must be a hub id or a local data set folder, got None"),
    ({"source": "json", "path": "x", "n": 0}, "'n' must be an integer >= 1, got 0"),
    ({"source": "json", "path": "x", "n": -3}, "'n' must be an integer >= 1, got -3"),
    ({"source": "json", "path": "x", "n": 2.5}, "'n' must be an integer >= 1, got 2.5"),
    ({"source": "json", "path": "x", "n": 2.0}, "'n' must be an integer >= 1, got 2.0"),
    ({"source": "json", "path": "x", "n": True}, "'n' must be an integer >= 1, got True"),
    ({"source": "json", "path": "x", "seed": "0"}, "'seed' must be an integer"),
    ({"source": "json", "path": "x", "replace": "yes"}, "'replace' must be true or false"),
    ({"source": "json", "path": "x", "template": 3}, "'template' must be a format string .*got 3"),
    ({"source": "json", "path": "x", "template": "{} {0}"}, "'template' must name its fields"),
    ({"source": "json", "path": "x", "template": "{question"}, "not a valid format string"),
    ({"source": "json", "path": "x", "nn": 5}, r"unknown key\(s\) \['nn'\]"),
    ({"source": "json", "path": "x", "nn": None}, r"unknown key\(s\) \['nn'\]"),
    ({"source": "json", "path": "x", "columns": ["a"]}, r"\['columns'\] do not apply to source 'json'"),
    ({"source": "json", "path": "x", "split": "test"}, r"\['split'\] do not apply"),
    ({"source": "csv", "path": "x", "columns": "a,b"}, "'columns' must be a non-empty list .*got 'a,b'"),
    ({"source": "csv", "path": "x", "columns": ["a", "a"]}, r"'columns' must be .*distinct.*got \['a', 'a'\]"),
    ({"source": "csv", "path": "x", "columns": ["a", ""]}, r"'columns' must be .*non-empty names, got \['a', ''\]"),
    ({"source": "csv", "path": "x", "id_field": ""}, "'id_field' must be a non-empty string"),
    ({"source": "hf", "path": "x", "name": 3}, "'name' must be a config name or a list.*got 3"),
    ({"source": "hf", "path": "x", "name": []}, r"distinct config names, got \[\]"),
    ({"source": "hf", "path": "x", "name": ["algebra", "algebra"]}, "distinct config names, got"),
    ({"source": "hf", "path": "x", "revision": 3}, "'revision' must be a hub revision, got 3"),
    ({"source": "synthetic"}, "'task' must be a non-empty string, got None"),
    ({"source": "synthetic", "task": "math", "split": "val"}, "'split' must be train or test, got 'val'"),
    ({"source": "synthetic", "task": "math", "n_test": 5}, "'n_train' must be an integer >= 0, got None"),
    ({"source": "synthetic", "task": "math", "n_train": -1, "n_test": 5}, "'n_train' must be an integer >= 0, got -1"),
    ({"source": "synthetic", "task": "math", "path": "x"}, r"\['path'\] do not apply"),
]


@pytest.mark.parametrize(("spec", "message"), REJECTED)
def test_validate_spec_rejects(spec, message):
    with pytest.raises(ValueError, match=message):
        validate_spec(spec)


def test_validate_spec_takes_python_paths_tuples_and_nulls(tmp_path):
    """A path may be os.PathLike and a list a tuple; a key of another source set to None is absent."""
    path = tmp_path / "x_val.csv"
    path.write_text("what?,yes\n", encoding="utf-8")
    spec = {"source": "csv", "path": path, "columns": ("q", "a"), "template": "{subject}: {q} {a}", "name": None,
            "task": None, "n_train": None}
    validate_spec(spec)
    assert list(load_texts(spec)) == ["x: what? yes"]


# What only validate_spec checks: a template's fields (no schema can parse a format string), and
# integers as Python's (JSON Schema counts 2.0 as an integer); the workflow runs validate_spec too.
SCHEMA_CASES = [case for case in REJECTED if isinstance(case[0], dict)
                and not isinstance(case[0].get("template"), str) and case[0].get("n") != 2.0]


@pytest.mark.parametrize(("spec", "message"), SCHEMA_CASES)
def test_the_workflow_config_rejects_the_same_specs_by_the_same_schema(spec, message):
    """schemas/config.schema.yaml's data sets are mathneuro/dataset.schema.yaml, through a $ref
    that Snakemake's validate resolves."""
    utils = pytest.importorskip("snakemake.utils")
    from snakemake.exceptions import WorkflowError

    config = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    utils.validate(copy.deepcopy(config), str(CONFIG_SCHEMA))  # the config as it is: valid
    config["datasets"]["math"] = spec
    with pytest.raises(WorkflowError):
        utils.validate(config, str(CONFIG_SCHEMA))


def test_validation_happens_before_loading(tmp_path):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(ValueError, match="'n' must be an integer >= 1"):
        load_texts({"source": "json", "path": str(missing), "n": 0})


def test_null_optional_keys_count_as_absent(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS[:2])
    spec = {"source": "json", "path": str(path), "template": "{q}", "n": None, "seed": None, "id_field": None,
            "columns": None, "replace": None}
    validate_spec(spec)
    assert load_texts(spec).ids == ["d.jsonl:0", "d.jsonl:1"]


def test_template_with_missing_field_names_it(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS[:2])
    with pytest.raises(ValueError, match=r"field 'question'.*fields \['a', 'q', 'subject', 'uid'\]"):
        load_texts({"source": "json", "path": str(path), "template": "Question: {question}"})
    with pytest.raises(ValueError, match="field 'text'"):  # the default template
        load_texts({"source": "json", "path": str(path)})


def test_glob_matching_nothing_names_pattern(tmp_path):
    pattern = str(tmp_path / "*_test.csv")
    with pytest.raises(FileNotFoundError, match=r"matched no files") as info:
        load_texts({"source": "csv", "path": pattern})
    assert pattern in str(info.value)


def test_missing_file_names_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        load_texts({"source": "json", "path": str(tmp_path / "missing.jsonl")})


@pytest.mark.parametrize(("name", "source", "content"), [("e.jsonl", "json", ""), ("e.csv", "csv", "q,a\n")])
def test_empty_data_is_an_error(tmp_path, name, source, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match="no records"):
        load_texts({"source": source, "path": str(path), "template": "{q}"})


def test_bad_json_line_is_reported(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"q": 1}\n{oops\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        load_texts({"source": "json", "path": str(path), "template": "{q}"})


def test_template_error_inside_format_is_reported(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", RECORDS[:1])
    with pytest.raises(ValueError, match="'template'.*failed"):
        load_texts({"source": "json", "path": str(path), "template": "{q:>{width}}"})


# --------------------------------------------------------------------------- local copies of hub data

HUB_TEMPLATE = "{question}\nA. {choices[0]}\nB. {choices[1]}\nC. {choices[2]}\nD. {choices[3]}\nAnswer: {answer_letter}"


@needs_shared_data
def test_mmlu_release_converted_to_hub_records_renders_as_the_csv_does(tmp_path):
    """The hub's cais/mmlu records (choices list, integer answer) made from the original release,
    read through a local_data redirect of an hf spec, give the same texts as the CSVs themselves."""
    from mathneuro.mmlu import write_mmlu_records

    counts = write_mmlu_records(MMLU, tmp_path)
    assert counts["dev"] == 57 * 5 and set(counts) == {"dev", "validation", "test"}
    local = {"cais/mmlu": {"files": {s: str(tmp_path / s / "{name}.jsonl") for s in counts}}}
    hub_spec = {"source": "hf", "path": "cais/mmlu", "name": "all", "split": "dev", "template": HUB_TEMPLATE}
    from_hub_format = load_texts(hub_spec, local_data=local)
    from_csv = load_texts(mmlu_spec("dev"))
    assert list(from_hub_format) == list(from_csv)
    one = load_texts({**hub_spec, "name": "anatomy", "split": "dev+validation"}, local_data=local)
    assert len(one) == 5 + len((MMLU / "val" / "anatomy_val.csv").read_text().splitlines())


def test_local_files_resolve_names_aliases_and_name_what_is_missing(tmp_path):
    from mathneuro.data import local_files, split_names

    for split in ("train", "test"):
        write_jsonl(tmp_path / f"main-{split}.jsonl", RECORDS)
    local = {"openai/gsm8k": {"aliases": ["gsm8k"], "files": {s: str(tmp_path / f"{{name}}-{s}.jsonl") for s in ("train", "test")}}}
    assert local_files(local, "gsm8k", "main", ["test"]) == ("json", {"test": [str(tmp_path / "main-test.jsonl")]})
    assert local_files(local, "other/data", "main", ["test"]) is None
    with pytest.raises(ValueError, match="'validation'"):
        local_files(local, "openai/gsm8k", "main", ["validation"])
    assert split_names("dev+validation[:50%]") == ["dev", "validation"]
    texts = load_texts({"source": "hf", "path": "openai/gsm8k", "name": "main", "split": "train+test",
                        "template": "{q}"}, local_data=local)
    assert list(texts) == [r["q"] for r in RECORDS] * 2


def test_a_local_copy_is_read_as_its_files_are(tmp_path):
    """An hf spec's local copy goes through the file readers: values as written (an int beside a
    float stays an int, where datasets' typed columns rendered 1.0), split expressions sliced as
    datasets slices them."""
    records = [{"q": "a", "x": 1, "o": {"k": 1}}, {"q": "b", "x": 2.5, "o": {"j": "y"}}, {"q": "c", "x": 3, "o": {}},
               {"q": "d", "x": 0.1, "o": {"k": [1]}}]
    write_jsonl(tmp_path / "train.jsonl", records)
    local = {"some/data": {"files": {"train": str(tmp_path / "train.jsonl")}}}
    spec = {"source": "hf", "path": "some/data", "template": "{q} {x} {o}"}
    expected = ["a 1 {'k': 1}", "b 2.5 {'j': 'y'}", "c 3 {}", "d 0.1 {'k': [1]}"]
    assert list(load_texts(spec, local_data=local)) == expected
    assert list(load_texts({**spec, "source": "json", "path": str(tmp_path / "train.jsonl")})) == expected
    sliced = load_texts({**spec, "split": "train[:50%]+train[-1:]"}, local_data=local)
    assert list(sliced) == [expected[0], expected[1], expected[3]]
    assert sliced.ids == [f"train[:50%]+train[-1:]:{i}" for i in range(3)]


def test_a_list_of_configs_reads_their_splits_one_after_the_other(tmp_path):
    """MATH's subjects are configs of one hub data set: `name` as a list reads them all."""
    subjects = {"algebra": 3, "geometry": 2}
    for subject, size in subjects.items():
        write_jsonl(tmp_path / f"{subject}-train.jsonl",
                    [{"problem": f"{subject} {i}", "solution": str(i)} for i in range(size)])
    local = {"EleutherAI/hendrycks_math": {"files": {"train": str(tmp_path / "{name}-train.jsonl")}}}
    spec = {"source": "hf", "path": "EleutherAI/hendrycks_math", "name": list(subjects),
            "template": "Problem: {problem}\nSolution: {solution}"}
    every = load_texts(spec, local_data=local)
    expected = [(f"{s}/train:{i}", f"Problem: {s} {i}\nSolution: {i}") for s, n in subjects.items() for i in range(n)]
    assert list(zip(every.ids, every)) == expected
    drawn = load_texts({**spec, "n": 20, "seed": 1}, local_data=local)
    assert set(zip(drawn.ids, drawn)) <= set(expected) and len(set(drawn.ids)) == len(expected)


def test_answer_letter_only_for_choice_records():
    from mathneuro.data import _with_letter

    assert _with_letter({"choices": ["a", "b", "c"], "answer": 2})["answer_letter"] == "C"
    assert "answer_letter" not in _with_letter({"answer": 2})
    assert "answer_letter" not in _with_letter({"choices": ["a"], "answer": "B"})
