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
