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
