"""Same spec, same texts: load_texts over a table of specs against recorded hashes, so that any
change of how files are read (e.g. moving onto ``datasets.load_dataset``) shows every text it
changes.

``tests/fixtures/data_texts.json`` holds, per case, the spec, where its relative paths start
(``shared``: the project root, so ``../shared/data/...``; ``tmp``: a folder the test fills with
the small files of ``FILES`` below, the hub-format MMLU records, the synthetic tasks' JSON lines
and the project's hub fixtures) and the count and SHA-256 of the texts and of the ids.

The hashes were recorded with the JSON/CSV/Parquet readers of ``mathneuro.records`` (the ``hf``
case reads a ``local_data`` copy, through the same readers since; its hash held); re-record (only
when a change of texts is intended): ``python tests/test_data_loading.py``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURE = REPO / "tests" / "fixtures" / "data_texts.json"
HUB_FIXTURES = REPO / "tests" / "fixtures" / "hub"

GSM8K_TEMPLATE = "Question: {question}\nAnswer: {answer}"
MMLU_COLUMNS = ["question", "A", "B", "C", "D", "answer"]
MMLU_TEMPLATE = "{question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {answer}"
HUB_TEMPLATE = "{question}\nA. {choices[0]}\nB. {choices[1]}\nC. {choices[2]}\nD. {choices[3]}\nAnswer: {answer_letter}"
RACE_TEMPLATE = ("Article: {article}\nQuestion: {question}\nA. {options[0]}\nB. {options[1]}\nC. {options[2]}\n"
                 "D. {options[3]}\nAnswer: {answer}")
SYNTHETIC = {"n_train": 60, "n_test": 12, "data_seed": 3}

# Small files written into the tmp folder: text files verbatim (bytes as UTF-8), ``.parquet`` from rows.
FILES: dict[str, Any] = {
    # CSV with a header: quoting, newlines, what pandas would read as numbers, NA or booleans
    "csv/tricky.csv": ('q,num,empty,na,flag,pad\n"multi\nline, ""quoted""",007,,NA,True, x \n'
                       "plain,1.50,,None,False,y\n" "last,12,,nan,TRUE,\n"),
    "csv/numbers.csv": "id,n,f\n001,1,0.10\n002,20,2.50\n010,300,1e3\n",
    "csv/bom.csv": "\ufeffq,a\nhello,1\nworld,2\n",
    "csv/crlf.csv": "q,a\r\nx,1\r\ny,2\r\n",
    "csv/ragged.csv": "q,a\nx,y,extra\nv,w\n",  # a value past the header's names is left out
    # header-less CSVs named like MMLU's release (subject from the file name)
    "csv/headerless/alpha_val.csv": 'what?,yes\n"why,\nnot?",0042\n',
    "csv/headerless/beta_test.csv": "how?,3.0\nwho?,\n",
    # JSON lines: ints, floats, nulls, booleans, lists, unicode (a field of ints next to floats: test below)
    "json/types.jsonl": "".join(json.dumps(r) + "\n" for r in [
        {"q": "one", "i": 1, "f": 0.30000000000000004, "l": [1, 2], "b": True, "z": None,
         "u": "h\u00e9llo \u2028 \u4e16\u754c"},
        {"q": "two", "i": -7, "f": 2.5, "l": [3], "b": False, "z": "zz", "u": "\U0001F600"},
        {"q": "three", "i": 2**62, "f": -0.0, "l": [], "b": True, "z": None, "u": ""},
    ]),
    # strings that look like dates, objects whose keys differ from record to record
    "json/dates.jsonl": ('{"d": "2020-01-01", "t": "2020-01-01 10:00:00", "s": {"a": 1, "c": true, "l": [1, 2]}}\n'
                         '{"d": "2021-02-03", "t": "2020-01-01T10:00:00", "s": {"b": "x", "a": 2}}\n'
                         '{"d": "2021-02-04", "t": "2020-01-02", "s": {"a": 3, "n": {"m": 12345678901234567}}}\n'),
    "json/t1_crlf.jsonl": '{"text": "a"}\r\n{"text": "b"}\r\n\r\n{"text": "c"}\r\n\n',  # and blank lines
    "json/t2_array.json": json.dumps([{"text": "first", "n": 1}, {"text": "second", "n": 2}]),
    "json/t3_lines.json": '{"text": "l0"}\n{"text": "l1"}\n',
    "json/mixed_keys.jsonl": '{"q": "a", "extra": 1}\n{"q": "b"}\n{"q": "c", "other": "x"}\n',
    "json/subject/own_test.jsonl": '{"q": "s0", "subject": "kept"}\n{"q": "s1", "subject": "kept"}\n',
    "json/choices.jsonl": "".join(json.dumps(r) + "\n" for r in [
        {"question": "q0", "choices": ["a", "b", "c", "d"], "answer": 2},
        {"question": "q1", "choices": ["e", "f", "g", "h"], "answer": 0},
        {"question": "q2", "choices": ["i", "j", "k", "l"], "answer": 3, "answer_letter": "own"},
    ]),
    "json/glob/b_test.jsonl": '{"text": "b0"}\n',
    "json/glob/a_test.jsonl": '{"text": "a0"}\n{"text": "a1"}\n',
    "json/glob/sub/a_test.jsonl": '{"text": "sub-a0"}\n',
    "parquet/p_dev.parquet": [{"text": "hello", "k": 1, "f": 0.5, "l": ["x", "y"]},
                              {"text": "world", "k": 2, "f": 2.0, "l": []}],
    "parquet/q_dev.parquet": [{"text": "third", "k": 3, "f": 1.25, "l": ["z"]}],
}


def _cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (base, spec)."""
    gsm = {"source": "json", "template": GSM8K_TEMPLATE}
    mmlu = {"source": "csv", "columns": MMLU_COLUMNS, "template": MMLU_TEMPLATE}
    d = "../shared/data"
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "gsm8k train, all": ("shared", {**gsm, "path": f"{d}/gsm8k/train.jsonl"}),
        "gsm8k train, 500 with replacement": ("shared", {**gsm, "path": f"{d}/gsm8k/train.jsonl", "n": 500, "seed": 3}),
        "gsm8k test, 200 without replacement": ("shared", {**gsm, "path": f"{d}/gsm8k/test.jsonl", "n": 200, "seed": 1,
                                                           "replace": False}),
        "gsm8k both files by glob": ("shared", {"source": "json", "path": f"{d}/gsm8k/*.jsonl",
                                                "template": "{subject}: {question}"}),
        "mmlu test, all subjects": ("shared", {**mmlu, "path": f"{d}/mmlu/test/*_test.csv",
                                               "template": "[{subject}] " + MMLU_TEMPLATE}),
        "mmlu dev": ("shared", {**mmlu, "path": f"{d}/mmlu/dev/*_dev.csv"}),
        "mmlu val, 300 with replacement": ("shared", {**mmlu, "path": f"{d}/mmlu/val/*_val.csv", "n": 300, "seed": 2}),
        "mmlu every split": ("shared", {**mmlu, "path": f"{d}/mmlu/*/*.csv", "template": "{subject}|{answer}|{A}"}),
        "mmlu dev, recursive glob": ("shared", {**mmlu, "path": f"{d}/mmlu/**/*_dev.csv", "n": 50, "seed": 9,
                                                "replace": False}),
        "mmlu one file": ("shared", {**mmlu, "path": f"{d}/mmlu/test/abstract_algebra_test.csv"}),
        "mmlu hub records: json": ("tmp", {"source": "json", "path": "mmlu_hub/dev/all.jsonl",
                                           "template": "{subject}: " + HUB_TEMPLATE}),
        "mmlu hub records: json glob, sampled": ("tmp", {"source": "json", "path": "mmlu_hub/dev/*.jsonl",
                                                         "template": HUB_TEMPLATE, "n": 100, "seed": 4}),
        "mmlu hub records: hf local_data": ("tmp", {"source": "hf", "path": "cais/mmlu", "name": "all",
                                                    "split": "dev+validation", "template": HUB_TEMPLATE,
                                                    "cache_dir": "hf_cache"}),
        "race fixture": ("tmp", {"source": "json", "path": "hub/ehovy/race/high/*.jsonl", "template": RACE_TEMPLATE}),
        "hendrycks_math fixture": ("tmp", {"source": "json", "path": "hub/EleutherAI/hendrycks_math/*/train.jsonl",
                                           "template": "{subject} {level} {type}: {problem} => {solution}"}),
        "csv with header, tricky values": ("tmp", {"source": "csv", "path": "csv/tricky.csv",
                                                   "template": "{q}|{num}|{empty}|{na}|{flag}|{pad}|{subject}"}),
        "csv numbers stay strings": ("tmp", {"source": "csv", "path": "csv/numbers.csv", "template": "{id} {n} {f}",
                                             "id_field": "id"}),
        "csv bom and crlf": ("tmp", {"source": "csv", "path": "csv/[bc]*.csv", "template": "{q}={a}"}),
        "csv with a ragged row": ("tmp", {"source": "csv", "path": "csv/ragged.csv", "template": "{q}|{a}"}),
        "csv header-less with columns": ("tmp", {"source": "csv", "path": "csv/headerless/*.csv", "columns": ["q", "a"],
                                                 "template": "{subject}: {q} -> {a}"}),
        "json types": ("tmp", {"source": "json", "path": "json/types.jsonl",
                               "template": "{q} {i} {f} {l} {b} {z} {u} {l!r:>9}"}),
        "json dates and objects": ("tmp", {"source": "json", "path": "json/dates.jsonl",
                                           "template": "{d}|{t}|{s}|{s[a]}"}),
        "json crlf, array, lines in .json": ("tmp", {"source": "json", "path": "json/t[0-9]_*",
                                                     "template": "{text}"}),
        "json records with different keys": ("tmp", {"source": "json", "path": "json/mixed_keys.jsonl",
                                                     "template": "{q}"}),
        "json own subject": ("tmp", {"source": "json", "path": "json/subject/*.jsonl", "template": "{subject}/{q}"}),
        "json answer_letter": ("tmp", {"source": "json", "path": "json/choices.jsonl",
                                       "template": "{question} {choices} {answer} {answer_letter}"}),
        "json glob, sorted, recursive, same names": ("tmp", {"source": "json", "path": "json/glob/**/*_test.jsonl",
                                                             "template": "{subject}/{text}"}),
        "json glob, sampled": ("tmp", {"source": "json", "path": "json/glob/*_test.jsonl", "template": "{text}",
                                       "n": 7, "seed": 11}),
        "parquet": ("tmp", {"source": "parquet", "path": "parquet/*.parquet",
                            "template": "{text} {k} {f} {l} {subject}"}),
        "parquet default template": ("tmp", {"source": "parquet", "path": "parquet/p_dev.parquet"}),
    }
    config_templates = {"math": GSM8K_TEMPLATE, "reading": "{question}\nAnswer: {answer}",
                        "facts": "{question} {choices} {label} {answer}"}
    for task, template in config_templates.items():
        base = {"source": "synthetic", "task": task, **SYNTHETIC}
        cases[f"synthetic {task}: train, training text"] = ("tmp", base)
        cases[f"synthetic {task}: test, sampled"] = ("tmp", {**base, "split": "test", "n": 30, "seed": 5})
        cases[f"synthetic {task}: template, id_field"] = ("tmp", {**base, "template": template, "id_field": "id"})
        cases[f"synthetic {task} as json lines"] = ("tmp", {"source": "json", "path": f"synthetic/{task}/train.jsonl",
                                                            "template": template, "n": 40, "seed": 0})
    return cases


def write_files(folder: Path) -> dict[str, Any]:
    """Fill ``folder`` with every file the ``tmp`` cases read; return their ``local_data``."""
    from mathneuro import synthetic
    from mathneuro.mmlu import write_mmlu_records

    for name, content in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(content), path)
        else:
            path.write_bytes(content.encode("utf-8"))
    for task in ("math", "reading", "facts"):
        synthetic.write_task(task, folder / "synthetic", n_train=SYNTHETIC["n_train"], n_test=SYNTHETIC["n_test"],
                             seed=SYNTHETIC["data_seed"])
    shutil.copytree(HUB_FIXTURES, folder / "hub")
    counts = write_mmlu_records(SHARED_DATA / "mmlu", folder / "mmlu_hub")
    return {"cais/mmlu": {"files": {s: str(folder / "mmlu_hub" / s / "{name}.jsonl") for s in counts}}}


def digest(values: list[str]) -> str:
    return hashlib.sha256(json.dumps(values, ensure_ascii=False).encode("utf-8")).hexdigest()


def summary(spec: dict[str, Any], base: Path, local_data: dict[str, Any]) -> dict[str, Any]:
    """Count and hashes of the texts and ids ``load_texts`` gives (ids with ``base`` taken out)."""
    from mathneuro.data import load_texts

    if spec.get("cache_dir"):  # load_texts takes it as it is: keep it in the tmp folder
        spec = {**spec, "cache_dir": str(base / spec["cache_dir"])}
    texts = load_texts(spec, base_dir=base, local_data=local_data)
    prefix = str(base) + "/"
    ids = [i[len(prefix):] if i.startswith(prefix) else i for i in texts.ids]
    return {"n": len(texts), "unique_ids": len(set(ids)), "texts_sha256": digest(list(texts)),
            "ids_sha256": digest(ids)}


def mmlu_records_digest() -> str:
    """Hash of mmlu_release_records over the shared release (the hub-format records the workflow writes)."""
    from mathneuro.mmlu import mmlu_release_records

    records = mmlu_release_records(SHARED_DATA / "mmlu")
    return hashlib.sha256(json.dumps(records, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def record(path: Path = FIXTURE) -> None:
    """Write the fixture from today's load_texts."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp).resolve()
        local_data = write_files(folder)
        bases = {"shared": REPO, "tmp": folder}
        out = {"mmlu_release_records_sha256": mmlu_records_digest(), "cases": {}}
        for name, (base, spec) in _cases().items():
            out["cases"][name] = {"base": base, "spec": spec, **summary(spec, bases[base], local_data)}
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- tests

needs_shared_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason=f"shared benchmark data folder {SHARED_DATA} is absent"
)
EXPECTED = json.loads(FIXTURE.read_text(encoding="utf-8")) if FIXTURE.is_file() else {"cases": {}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data_texts").resolve()
    return folder, write_files(folder)


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)


def test_fixture_covers_the_table():
    assert {name: (c["base"], c["spec"]) for name, c in EXPECTED["cases"].items()} == {
        name: (base, json.loads(json.dumps(spec))) for name, (base, spec) in _cases().items()}


@needs_shared_data
@pytest.mark.parametrize("name", sorted(EXPECTED["cases"]))
def test_same_texts_as_recorded(name, files):
    folder, local_data = files
    case = EXPECTED["cases"][name]
    base = REPO if case["base"] == "shared" else folder
    got = summary(case["spec"], base, local_data)
    assert got == {k: case[k] for k in got}


@needs_shared_data
def test_same_mmlu_release_records_as_recorded():
    assert mmlu_records_digest() == EXPECTED["mmlu_release_records_sha256"]


@needs_shared_data
@pytest.mark.parametrize(("hub_split", "folder"), [("validation", "val"), ("test", "test")])
def test_hub_format_mmlu_json_renders_as_the_release_csv(files, hub_split, folder):
    """write_mmlu_records keeps U+0085 (NEL) in three MMLU questions as it is; JSON lines end at
    "\n" only (str.splitlines() split inside those questions and could not read these files)."""
    from mathneuro.data import load_texts

    tmp, _ = files
    hub = load_texts({"source": "json", "path": str(tmp / "mmlu_hub" / hub_split / "all.jsonl"),
                      "template": HUB_TEMPLATE})
    release = load_texts({"source": "csv", "path": str(SHARED_DATA / "mmlu" / folder / f"*_{folder}.csv"),
                          "columns": MMLU_COLUMNS, "template": MMLU_TEMPLATE})
    assert list(hub) == list(release)
    assert any("\x85" in text for text in hub)


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)


def texts(spec: dict[str, Any], folder: Path) -> list[str]:
    from mathneuro.data import load_texts

    return list(load_texts(spec, base_dir=folder))


def test_files_of_one_glob_with_different_fields(tmp_path):
    """Files of one glob need not share their fields."""
    write(tmp_path, {"a_test.csv": "q,a\nx,1\n", "b_test.csv": "id,q,a,more\n7,y,2,z\n",
                     "c_test.csv": "q,n\n3,4\n", "a_dev.jsonl": '{"q": "x", "a": 1}\n',
                     "b_dev.jsonl": '{"q": "y", "a": "two", "o": {"k": [1]}}\n'})
    assert texts({"source": "csv", "path": "*_test.csv", "template": "{subject} {q}"}, tmp_path) == [
        "a x", "b y", "c 3"]
    assert texts({"source": "json", "path": "*_dev.jsonl", "template": "{q} {a}"}, tmp_path) == ["x 1", "y two"]


def test_empty_files_add_no_records(tmp_path):
    write(tmp_path, {"a_test.jsonl": "", "b_test.jsonl": '{"text": "b"}\n', "c_test.jsonl": "\n",
                     "a.csv": "q\n", "b.csv": "", "c.csv": "q\nc\n"})
    assert texts({"source": "json", "path": "*_test.jsonl"}, tmp_path) == ["b"]
    assert texts({"source": "csv", "path": "*.csv", "template": "{q}"}, tmp_path) == ["c"]


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE)
    print(f"wrote {FIXTURE if len(sys.argv) < 2 else sys.argv[1]}")
