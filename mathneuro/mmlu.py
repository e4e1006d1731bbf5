"""MMLU's original release as the hub's ``cais/mmlu`` records, for machines without the hub.

The release has folders ``dev/``, ``val/`` and ``test/`` of
header-less CSVs ``<subject>_<folder>.csv``: question, the four choices and the answer letter. The
hub's record is ``{"question", "subject", "choices": [A, B, C, D], "answer": index of the letter}``.
:func:`write_mmlu_records` writes them where a ``local_data`` entry of ``cais/mmlu`` reads them
(the workflow's ``mmlu_release`` entries; ``workflow_scripts/mmlu_records.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mathneuro.records import read_records

MMLU_RELEASE_SPLITS = {"dev": "dev", "val": "validation", "test": "test"}  # release folder -> hub split
_COLUMNS = ["question", "A", "B", "C", "D", "answer"]


def mmlu_release_records(release_dir: str | os.PathLike[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The release's records in the hub's format: ``{hub split: {subject: records}}``, subjects
    and records in file order. Raises FileNotFoundError for a folder without its CSVs and
    ValueError naming a file whose answer is not a letter A-D."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for folder, split in MMLU_RELEASE_SPLITS.items():
        files = sorted(Path(release_dir, folder).glob(f"*_{folder}.csv"))
        if not files:
            raise FileNotFoundError(f"MMLU release {release_dir}: no {folder}/*_{folder}.csv files")
        out[split] = {}
        for file in files:
            subject = file.name[: -len(f"_{folder}.csv")]
            rows = read_records(file, "csv", _COLUMNS)
            for row in rows:
                if row["answer"] not in ("A", "B", "C", "D"):
                    raise ValueError(f"{file}: answer {row['answer']!r} is not a letter A-D")
            out[split][subject] = [
                {"question": r["question"], "subject": subject, "choices": [r["A"], r["B"], r["C"], r["D"]],
                 "answer": "ABCD".index(r["answer"])}
                for r in rows
            ]
    return out


def write_mmlu_records(release_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> dict[str, int]:
    """Write :func:`mmlu_release_records` as ``out_dir/<split>/<subject>.jsonl`` and
    ``out_dir/<split>/all.jsonl`` (every subject, sorted by subject as the hub's ``all``).
    Returns the number of records per split."""
    counts = {}
    for split, subjects in mmlu_release_records(release_dir).items():
        folder = Path(out_dir, split)
        folder.mkdir(parents=True, exist_ok=True)
        every = []
        for subject, records in sorted(subjects.items()):
            _write_jsonl(folder / f"{subject}.jsonl", records)
            every += records
        _write_jsonl(folder / "all.jsonl", every)
        counts[split] = len(every)
    return counts


def _write_jsonl(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """One JSON object per line, UTF-8 as it is (MMLU's U+0085 and U+2028 stay inside their strings)."""
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
