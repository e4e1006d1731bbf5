"""mathneuro.freshness: content digests (what a file or folder holds, cached by its stat),
script digests (code, not comments), and settling the times a copy moved away from Snakemake's
records of the jobs that wrote the files."""

from __future__ import annotations

import json
import os
import shutil
from base64 import urlsafe_b64encode
from pathlib import Path

import pytest

from mathneuro import freshness
from mathneuro.freshness import DigestCache, digest, digests, script_digest, settle_times


@pytest.fixture
def cache(tmp_path) -> DigestCache:
    return DigestCache(tmp_path / "cache")


def folder(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (root / "sub" / "b.bin").write_bytes(bytes(range(256)))
    return root


def test_a_digest_is_the_content_whatever_the_file_times_names_or_copies(tmp_path, cache):
    model = folder(tmp_path / "model")
    before = digest(model, cache)
    os.utime(model / "a.txt", (1, 1))
    (model / ".hidden").write_text("lock")  # hidden files (locks, caches) and Snakemake's stamp: not content
    (model / ".snakemake_timestamp").touch()
    copy = shutil.copytree(model, tmp_path / "copy", copy_function=shutil.copy)
    assert digest(model, cache) == digest(copy, cache) == before
    (copy / "sub" / "b.bin").write_bytes(bytes(range(255)) + b"\x00")  # one byte
    assert digest(copy, cache) != before
    (copy / "sub" / "b.bin").write_bytes(bytes(range(256)))
    (copy / "a.txt").rename(copy / "c.txt")  # a file's name is content too
    assert digest(copy, cache) != before
    assert digest(model / "a.txt", cache) != digest(model / "sub" / "b.bin", cache)
    assert list(digests([model / "sub", model / "a.txt", model / "a.txt"], cache)) == sorted(
        {str(model / "sub"), str(model / "a.txt")})
    with pytest.raises(FileNotFoundError):
        digest(tmp_path / "missing", cache)


def test_the_workflows_own_files_are_named_by_their_path_in_it_so_another_checkout_reruns_nothing(tmp_path, cache):
    checkouts = [folder(tmp_path / name / "lm_tasks").parent for name in ("here", "there")]
    outside = tmp_path / "data.jsonl"
    outside.write_text("{}\n")
    named = [digests([root / "lm_tasks" / "a.txt", root / "lm_tasks" / "sub", outside], cache, root=root)
             for root in checkouts]
    assert repr(named[0]) == repr(named[1])  # as Snakemake compares params
    assert list(named[0]) == [str(outside), "lm_tasks/a.txt", "lm_tasks/sub"]  # the rest by its own path


def test_a_file_is_read_again_only_when_its_stat_changes_and_the_cache_outlives_the_process(tmp_path, monkeypatch):
    reads = []
    real = freshness._file_digest
    monkeypatch.setattr(freshness, "_file_digest", lambda path: reads.append(path) or real(path))
    file = tmp_path / "data.jsonl"
    file.write_text("{}\n")
    cache = DigestCache(tmp_path / "cache")
    first = digest(file, cache)
    assert digest(file, cache) == first and len(reads) == 1
    os.utime(file, (5, 5))
    assert digest(file, cache) == first and len(reads) == 2  # touched: read again, same digest
    cache.save()
    again = DigestCache(tmp_path / "cache")  # another process
    assert digest(file, again) == first and len(reads) == 2


def test_a_scripts_digest_is_its_code_not_its_comments_or_docstrings(tmp_path):
    script = tmp_path / "job.py"
    script.write_text('"""Does a thing."""\nx = 1  # one\n')
    code = script_digest(script)
    script.write_text('"""Does a thing, better said."""\n\n\nx = 1  # the one\n')
    assert script_digest(script) == code
    script.write_text('"""Does a thing."""\nx = 2\n')
    assert script_digest(script) != code


def record(metadata: Path, output: str, **fields) -> None:
    """A record as Snakemake's file persistence writes it: the output's path, URL-safe base64, in
    folders of at most 254 characters prefixed by '@' (the file system's name limit)."""
    encoded = urlsafe_b64encode(output.encode()).decode()
    parts = [encoded[i:i + 254] for i in range(0, len(encoded), 254)]
    path = metadata.joinpath(*["@" + p for p in parts[:-1]], parts[-1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rule": "r", "incomplete": False, **fields}))


def test_settling_sets_back_only_finished_outputs_newer_than_their_jobs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    metadata = tmp_path / ".snakemake" / "metadata"
    long = "results/" + "/".join(["deep" * 20] * 4) + "/out.parquet"  # a record split into folders
    outputs = {"results/a.txt": 1000.0, "results/b.txt": 2000.0, long: 3000.0, "results/folder": 4000.0,
               "results/running.txt": 5000.0}
    for path, end in outputs.items():
        target = Path(path)
        if path.endswith("folder"):
            target.mkdir(parents=True)
            (target / ".snakemake_timestamp").touch()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
        record(metadata, path, endtime=end, incomplete=path.endswith("running.txt"))
    os.utime("results/b.txt", (1500, 1500))  # older than its job's end: as the job left it
    settled = settle_times(metadata)
    assert sorted(settled) == sorted(["results/a.txt", long, "results/folder"])
    assert Path("results/a.txt").stat().st_mtime == 1000.0 and Path(long).stat().st_mtime == 3000.0
    assert Path("results/folder/.snakemake_timestamp").stat().st_mtime == 4000.0
    assert Path("results/b.txt").stat().st_mtime == 1500  # untouched
    assert Path("results/running.txt").stat().st_mtime > 5000  # an unfinished job's: left alone
    assert settle_times(metadata) == [] and settle_times(tmp_path / "none") == []


# Links named by content ------------------------------------------------------------------------------

ROOTS = [
    ("data/train.jsonl", "data"),
    ("/abs/data/train.jsonl", "/abs/data"),
    ("train.jsonl", "."),
    ("data/*.jsonl", "data"),
    ("data/{name}/test.jsonl", "data"),
    ("mmlu/dev/*_dev.csv", "mmlu/dev"),
    ("models/llama", "models"),
]


@pytest.mark.parametrize("pattern, root", ROOTS)
def test_the_static_root_is_the_folder_above_the_first_wildcard(pattern, root):
    assert freshness.static_root(pattern) == root


def tree(root: Path) -> Path:
    """Two subjects of split files, as MMLU's release lays them out."""
    for split in ("dev", "test"):
        (root / split).mkdir(parents=True)
        for subject in ("algebra", "law"):
            (root / split / f"{subject}_{split}.csv").write_text(f"{subject},{split}\n")
    return root


def files(pattern: str) -> list[Path]:
    """The files a pattern names, those in a folder it names included."""
    return [p for m in map(Path, freshness.matches(pattern)) for p in ([m] if m.is_file() else sorted(m.rglob("*.csv")))]


def texts(pattern: str) -> list[str]:
    return sorted(p.read_text() for p in files(pattern))


PATTERNS = ["data/dev/algebra_dev.csv", "data/*/law_*.csv", "data/{split}/algebra_{split}.csv", "data"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_link_names_the_pattern_by_content_and_reads_the_same_files(tmp_path, cache, monkeypatch, pattern):
    monkeypatch.chdir(tmp_path)
    tree(tmp_path / "data")
    linked = freshness.link(pattern, "results", cache)
    assert linked.startswith("results/content/") and linked.endswith(os.path.relpath(pattern, freshness.static_root(pattern)))
    assert texts(linked) == texts(pattern)

    shutil.copytree(tmp_path / "data", tmp_path / "elsewhere" / "data")  # the same bytes at another path
    shutil.rmtree(tmp_path / "data")
    moved = freshness.link(f"elsewhere/{pattern}", "results", cache)
    assert moved == linked and texts(moved) == texts(f"elsewhere/{pattern}")  # pointed at the new place

    file = max(files(f"elsewhere/{pattern}"))
    file.write_text(file.read_text() + "changed\n")
    assert freshness.link(f"elsewhere/{pattern}", "results", cache) != linked


def test_a_pattern_that_names_nothing_stays_as_it_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert freshness.link("missing/*.jsonl") == "missing/*.jsonl" and not (tmp_path / "results").exists()


def test_a_link_with_a_role_keeps_its_name_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tree(tmp_path / "tasks")
    linked = freshness.link("tasks", "results", role="include_path")
    assert linked == "results/content/include_path/tasks"
    assert freshness.named_link(f"{linked}/dev/law_dev.csv") and not freshness.named_link(freshness.link("tasks/dev"))
    assert not freshness.named_link("results/toy/stats/math.safetensors")
    assert freshness.linked(linked) and freshness.linked(freshness.link("tasks/dev"))
    assert not freshness.linked("results/toy/stats/math.safetensors") and not freshness.linked("tasks/dev")


def test_a_config_names_what_it_reads_from_the_machine_by_content_and_its_own_files_as_written(tmp_path, monkeypatch):
    from mathneuro.study.located import located

    monkeypatch.chdir(tmp_path)
    tree(tmp_path / "ext" / "mmlu")
    (tmp_path / "ext" / "math.jsonl").write_text('{"q": 1}\n')
    (tmp_path / "ext" / "held.jsonl").write_text('{"q": 2}\n')
    (tmp_path / "ext" / "model").mkdir()
    (tmp_path / "ext" / "model" / "config.json").write_text("{}")
    (tmp_path / "ext" / "gguf").mkdir()
    (tmp_path / "ext" / "gguf" / "m.gguf").write_bytes(b"GGUF")
    (tmp_path / "ext" / "gguf" / "other.gguf").write_bytes(b"not read")
    (tmp_path / "repo" / "data").mkdir(parents=True)
    (tmp_path / "repo" / "data" / "own.jsonl").write_text('{"q": 3}\n')
    config = {
        "datasets": {"math": {"source": "json", "path": "ext/math.jsonl", "heldout": {"path": "ext/held.jsonl"}},
                     "own": {"source": "json", "path": f"{tmp_path}/repo/data/own.jsonl"},
                     "made": {"source": "json", "path": "results/data/synthetic/math/train.jsonl"},
                     "hub": {"source": "hf", "path": "cais/mmlu"}},
        "local_data": {"cais/mmlu": {"mmlu_release": "ext/mmlu"},
                       "x/y": {"files": {"test": ["ext/mmlu/test/*.csv"], "dev": "ext/mmlu/dev/{name}_dev.csv"}}},
        "models": {"local": {"path": "ext/model"}, "quantized": {"path": "ext/gguf", "gguf": "m.gguf"},
                   "toy": {"path": "toy"}, "hub": {"path": "org/model"}},
        "evaluation": {"include_path": None},
    }
    out = located(config, "results", tmp_path / "repo")
    moved = {
        ("datasets", "math", "path"): "math.jsonl", ("datasets", "math", "heldout", "path"): "held.jsonl",
        ("local_data", "cais/mmlu", "mmlu_release"): "mmlu", ("local_data", "x/y", "files", "dev"): "{name}_dev.csv",
        ("models", "local", "path"): "model",
    }
    for keys, name in moved.items():
        value = out
        for key in keys:
            value = value[key]
        assert value.startswith("results/content/") and value.endswith(name), keys
    assert out["local_data"]["x/y"]["files"]["test"][0].endswith("/*.csv")
    gguf = Path(out["models"]["quantized"]["path"])
    assert sorted(p.name for p in gguf.iterdir()) == ["m.gguf"]  # the file alone, not its folder's others
    for keys in [("datasets", "own", "path"), ("datasets", "made", "path"), ("datasets", "hub", "path"),
                 ("models", "toy", "path"), ("models", "hub", "path")]:
        assert out[keys[0]][keys[1]][keys[2]] == config[keys[0]][keys[1]][keys[2]], keys
    assert config["datasets"]["math"]["path"] == "ext/math.jsonl"  # the config as written is not changed
