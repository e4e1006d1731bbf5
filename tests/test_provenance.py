"""Every output records which code made it; outputs made by code changed since are listed."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import torch

from mathneuro import ParameterMask, provenance


def test_the_code_hash_ignores_docstrings_comments_and_formatting(tmp_path):
    first, second, third = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    first.write_text('"""Module."""\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n')
    second.write_text('"""Another text."""\ndef f(x):\n    return (x + 1)\n')
    third.write_text('def f(x):\n    return x + 2\n')
    assert provenance.module_hash(first) == provenance.module_hash(second) != provenance.module_hash(third)


def test_outputs_record_the_modules_the_job_imported(tmp_path):
    import mathneuro.select  # noqa: F401  (a job that selected has it)

    mask = ParameterMask({"w": torch.zeros(3, 4, dtype=torch.bool)})
    mask.save(tmp_path / "mask.safetensors")
    provenance.write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    for name in ("mask.safetensors", "t.parquet"):
        recorded = provenance.read_fingerprint(tmp_path / name)
        assert recorded["version"] == provenance.project_version()
        assert recorded["modules"]["mathneuro.select"] == provenance.current_hash("mathneuro.select")
    assert pd.read_parquet(tmp_path / "t.parquet")["a"].tolist() == [1]


def test_stale_lists_exactly_the_outputs_made_by_changed_code(tmp_path):
    provenance.write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "fresh.parquet")
    table = pq.read_table(tmp_path / "fresh.parquet")
    older = json.loads(table.schema.metadata[provenance.KEY.encode()])
    older["modules"]["mathneuro.masks"] = "0" * 16  # made by a masks.py that differed
    pq.write_table(table.replace_schema_metadata({provenance.KEY.encode(): json.dumps(older).encode()}),
                   tmp_path / "old.parquet")
    (tmp_path / "plain.parquet").write_bytes((tmp_path / "fresh.parquet").read_bytes())
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "unstamped.parquet")
    assert provenance.stale(tmp_path) == {tmp_path / "old.parquet": ["mathneuro.masks"]}


def git(root, *args):
    import subprocess

    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_the_code_version_is_the_commit_marked_modified_when_the_code_differs_from_it(tmp_path):
    (tmp_path / "mathneuro").mkdir()
    (tmp_path / "mathneuro" / "m.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("text\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "first")
    commit = provenance._git(tmp_path, "rev-parse", "--short=12", "HEAD")
    versions = []
    for change in (None, ("README.md", "other text\n"), ("mathneuro/m.py", "x = 2\n")):
        if change:
            (tmp_path / change[0]).write_text(change[1])
        provenance.code_version.cache_clear()
        versions.append(provenance.code_version(tmp_path))
    provenance.code_version.cache_clear()
    assert versions == [commit, commit, f"{commit}+modified"]  # the docs are not code


def test_outside_a_checkout_the_code_version_is_the_package_version_and_a_digest_of_its_modules(tmp_path):
    provenance.code_version.cache_clear()
    version = provenance.code_version(tmp_path)  # no .git: as an installed package
    provenance.code_version.cache_clear()
    release, digest = version.split("+")
    assert release == provenance.project_version() and len(digest) == 12 and int(digest, 16) >= 0


def test_every_output_names_the_versions_that_made_it(tmp_path):
    from importlib.metadata import version

    provenance.write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    recorded = provenance.versions(provenance.read_fingerprint(tmp_path / "t.parquet"))
    assert list(recorded) == provenance.VERSION_COLUMNS
    assert recorded["code"] == provenance.code_version()
    assert {c: recorded[c] for c in provenance.LIBRARIES} == {c: version(d) for c, d in provenance.LIBRARIES.items()}
    assert provenance.versions(None) == dict.fromkeys(provenance.VERSION_COLUMNS)  # made before versions were kept


def test_other_code_lists_the_outputs_made_by_another_code_version(tmp_path, capsys):
    provenance.write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "fresh.parquet")
    table = pq.read_table(tmp_path / "fresh.parquet")
    older = {**json.loads(table.schema.metadata[provenance.KEY.encode()]), "code": "0123456789ab"}
    pq.write_table(table.replace_schema_metadata({provenance.KEY.encode(): json.dumps(older).encode()}),
                   tmp_path / "old.parquet")
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "unstamped.parquet")
    assert provenance.other_code(tmp_path) == [tmp_path / "old.parquet"]
    provenance.main([str(tmp_path), "--other-code"])
    assert capsys.readouterr().out.split() == [str(tmp_path / "old.parquet")]


def test_rows_of_other_code_are_counted_per_table(tmp_path, capsys):
    here = provenance.code_version()
    rows = pd.DataFrame({"code": [here, "0123456789ab", "0123456789ab", None], "value": [1.0, 2.0, 3.0, 4.0]})
    assert provenance.stale_rows(rows).tolist() == [False, True, True, True]
    rows.astype({"code": "string"}).to_parquet(tmp_path / "pruning.parquet")
    rows.to_parquet(tmp_path / "pruning_summary.parquet")  # a summary's rows join its repeats': not counted
    provenance.main([str(tmp_path), "--rows"])
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{tmp_path / 'pruning.parquet'}\t3 of 4 rows made by other code")
    assert "0123456789ab 2" in line and "(not recorded) 1" in line and line.endswith(here)


def test_the_tables_read_each_rows_versions_from_the_file_that_holds_it(tmp_path):
    from mathneuro.tables import read_tables

    provenance.write_parquet(pd.DataFrame({"value": [1.0, 2.0]}), tmp_path / "new.parquet")
    pd.DataFrame({"value": [3.0]}).to_parquet(tmp_path / "old.parquet")  # made before versions were kept
    paths = [str(tmp_path / "new.parquet"), str(tmp_path / "old.parquet")]
    rows = read_tables(paths, versions=True)
    here = provenance.versions(provenance.fingerprint())
    assert rows[provenance.VERSION_COLUMNS].iloc[:2].to_dict("records") == [here, here]
    assert rows[provenance.VERSION_COLUMNS].iloc[2].isna().all()
    assert list(read_tables(paths).columns) == ["value"]
