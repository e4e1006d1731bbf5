"""Where a dataset spec's records come from: one read path for data files and local copies of hub data.

:func:`open_table` gives the records of a spec's source as a :class:`Table`: how many, the rows
of given indices, and each row's default id (the formats are in :mod:`mathneuro.data`).

- ``json``, ``csv``, ``parquet``: the files ``path`` names (:func:`resolve_files`), one after the
  other, each record with the ``subject`` its file name gives unless it has its own.
- ``hf`` with an entry in ``local_data`` (:func:`local_files`; the workflow config's table of local
  copies): those files, read the same way, the split expression (``dev+validation[:50%]``) sliced
  as ``datasets`` slices it. Any other ``hf`` spec: ``datasets.load_dataset``.
- ``synthetic``: :func:`mathneuro.synthetic.generate`.

:func:`read_records` reads a file with a reader that keeps its values as they are written: JSON with
the standard library's ``json`` (an int stays an int, a float round-trips, a missing key stays
missing, null is None), CSV with its ``csv`` module (every value a string, as written: no type or
NA guessing) and Parquet with ``pyarrow.parquet`` (the file's own column types). Data-frame readers
(``datasets``, pandas, ``pyarrow.json``) type a column as a whole: a missing key becomes None or
NaN, an int column holding one float renders ``1.0``, and the same spec would no longer give the
same texts.
"""

from __future__ import annotations

import bisect
import csv
import glob
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}  # suffix -> reader
_GLOB_CHARS = frozenset("*?[")
_SUBJECT_SUFFIXES = ("_test", "_dev", "_val")

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Table:
    """The records of one source: ``size`` rows, ``rows(indices)`` reads them, ``label(i)`` is row
    ``i``'s default id."""

    size: int
    rows: Callable[[Sequence[int]], list[Record]]
    label: Callable[[int], str]


def _list_rows(records: Sequence[Record]) -> Callable[[Sequence[int]], list[Record]]:
    """Row reader over records already in memory."""
    return lambda indices: [records[i] for i in indices]


def _dataset_rows(dataset: Any) -> Callable[[Sequence[int]], list[Record]]:
    """Row reader over a ``datasets.Dataset`` (reads only the rows asked for)."""
    return lambda indices: dataset.select(list(indices)).to_list() if indices else []


def open_table(spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None = None,
               local_data: Mapping[str, Any] | None = None) -> Table:
    """The records of a valid spec's source; relative paths under ``base_dir`` if given."""
    source = spec["source"]
    if source == "synthetic":
        return _synthetic_table(spec)
    if source == "hf":
        return _hf_table(spec, base_dir, local_data or {})
    return _file_table(spec, base_dir)


def _get(spec: Mapping[str, Any], key: str, default: Any) -> Any:
    """``spec[key]``, or ``default`` when absent or None."""
    value = spec.get(key)
    return default if value is None else value


def _synthetic_table(spec: Mapping[str, Any]) -> Table:
    """Records from the project's synthetic tasks (imported lazily)."""
    from mathneuro import synthetic

    splits = synthetic.generate(
        spec["task"], n_train=spec["n_train"], n_test=spec["n_test"], seed=_get(spec, "data_seed", 0)
    )
    split = _get(spec, "split", "train")
    records = list(splits[split])
    return Table(size=len(records), rows=_list_rows(records), label=lambda i: f"{split}:{i}")


def config_names(spec: Mapping[str, Any]) -> list[str | None]:
    """The dataset configs an ``hf`` spec reads, in order (``[None]``: the default one)."""
    name = spec.get("name")
    return list(name) if isinstance(name, (list, tuple)) else [name]


def _hf_table(spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None,
              local_data: Mapping[str, Any]) -> Table:
    """A split of a hub data set (its local copy, a hub id or a local folder); of several configs,
    their splits one after the other."""
    path = str(spec["path"])
    if base_dir is not None and not os.path.isabs(path) and Path(base_dir, path).exists():
        path = str(Path(base_dir, path))
    split = _get(spec, "split", "train")
    names = config_names(spec)
    if local_entry(local_data, path) is not None:
        parts = [_local_split(local_data, path, name, split) for name in names]
        rows = _list_rows([record for part in parts for record in part])
    else:
        import datasets

        cache_dir = None if spec.get("cache_dir") is None else str(spec["cache_dir"])
        parts = [datasets.load_dataset(path, name, split=split, cache_dir=cache_dir, revision=spec.get("revision"))
                 for name in names]
        rows = _dataset_rows(parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts))
    starts = list(itertools.accumulate([0] + [len(p) for p in parts]))

    def label(i: int) -> str:
        if not isinstance(spec.get("name"), (list, tuple)):
            return f"{split}:{i}"
        part = bisect.bisect_right(starts, i) - 1
        return f"{names[part]}/{split}:{i - starts[part]}"

    return Table(size=starts[-1], rows=rows, label=label)


def _local_split(local_data: Mapping[str, Any], hub_id: str, name: str | None, split: str) -> list[Record]:
    """The records of split expression ``split`` of config ``name`` in the local copy of ``hub_id``,
    read as files are; splits joined by ``+`` one after the other, slices (``validation[:50%]``) cut
    as ``datasets`` cuts them (its ``ReadInstruction``, imported only for them)."""
    source, files = local_files(local_data, hub_id, name, split_names(split))
    records = {s: [record for file in paths for record in read_records(file, source)] for s, paths in files.items()}
    if "[" not in split:
        return [record for s in split_names(split) for record in records[s]]
    from datasets import ReadInstruction

    reads = ReadInstruction.from_spec(split).to_absolute({s: len(rows) for s, rows in records.items()})
    return [record for read in reads for record in records[read.splitname][read.from_:read.to]]


def _file_table(spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None) -> Table:
    """Concatenate the records of every file that ``path`` names, each with its ``subject``."""
    files = resolve_files(str(spec["path"]), base_dir)
    names = [f.name for f in files]
    labels_of = names if len(set(names)) == len(names) else [str(f) for f in files]
    records: list[Record] = []
    labels: list[str] = []
    for file, file_label in zip(files, labels_of):
        rows = read_records(file, spec["source"], spec.get("columns"))
        subject = _subject(file)
        records.extend(row if "subject" in row else {**row, "subject": subject} for row in rows)
        labels.extend(f"{file_label}:{i}" for i in range(len(rows)))
    return Table(size=len(records), rows=_list_rows(records), label=labels.__getitem__)


def _subject(file: Path) -> str:
    """MMLU-style subject: file stem without a trailing _test/_dev/_val."""
    stem = file.name.split(".", 1)[0]
    for suffix in _SUBJECT_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def read_records(file: str | os.PathLike[str], source: str,
                 columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The records of one ``json``, ``csv`` or ``parquet`` file, in file order.

    JSON: one object per line (lines end at ``"\\n"`` only, blank lines skipped) or one array of
    objects. CSV: the first row names the columns, or ``columns`` does for a file without a header
    (every row must then have as many values); UTF-8, with or without a byte-order mark. Raises
    ValueError naming the file and the line or row that cannot be read.
    """
    file = Path(file)
    if source == "csv":
        return _read_csv(file, columns)
    if source == "json":
        return _read_json(file)
    if source != "parquet":
        raise ValueError(f"{file}: no reader for source {source!r} (json, csv or parquet)")
    import pyarrow.parquet as pq

    return pq.read_table(file).to_pylist()


def _read_csv(file: Path, columns: Sequence[str] | None) -> list[dict[str, Any]]:
    """CSV rows as dicts of strings, named by the header or by ``columns``."""
    with open(file, newline="", encoding="utf-8-sig") as handle:
        if columns is None:
            return [dict(row) for row in csv.DictReader(handle)]
        records = []
        for row_no, row in enumerate(csv.reader(handle), start=1):
            if len(row) != len(columns):
                raise ValueError(
                    f"{file}: row {row_no} has {len(row)} values but 'columns' names {len(columns)}: {list(columns)}"
                )
            records.append(dict(zip(columns, row)))
        return records


def _read_json(file: Path) -> list[dict[str, Any]]:
    """JSON lines, or one JSON array, of objects."""
    text = file.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{file}: not a valid JSON array: {err}") from err
    else:
        records = []
        # str.splitlines() would also split inside a string at U+0085 (NEL) or U+2028, which some
        # of MMLU's questions hold
        for line_no, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{file}: line {line_no} is not valid JSON: {err}") from err
    if not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{file}: every JSON record must be an object")
    return records


def resolve_files(path: str, base_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """The file ``path`` names, or the sorted matches of a glob (``**`` recursive), under
    ``base_dir`` if given; FileNotFoundError naming the path when there is none."""
    full = os.path.join(base_dir, path) if base_dir is not None else path
    if any(c in path for c in _GLOB_CHARS):
        matches = sorted(Path(p) for p in glob.glob(full, recursive=True) if os.path.isfile(p))
        if not matches:
            raise FileNotFoundError(f"dataset spec: glob 'path' {full!r} matched no files")
        return matches
    if not os.path.isfile(full):
        raise FileNotFoundError(f"dataset spec: 'path' file not found: {full!r}")
    return [Path(full)]


def split_names(split: str) -> list[str]:
    """The splits a ``datasets`` split expression reads: ``"dev+validation[:50%]"`` -> dev, validation."""
    return [part.split("[", 1)[0].strip() for part in split.split("+")]


def local_entry(local_data: Mapping[str, Any], hub_id: str) -> Mapping[str, Any] | None:
    """The ``local_data`` entry of ``hub_id`` (by key or alias), or None."""
    for key, entry in local_data.items():
        if hub_id == key or hub_id in (entry.get("aliases") or []):
            return entry
    return None


def local_files(
    local_data: Mapping[str, Any], hub_id: str, name: str | None, splits: Sequence[str]
) -> tuple[str, dict[str, list[str]]] | None:
    """Where ``local_data`` keeps the ``splits`` of hub data set ``hub_id`` (config ``name``).

    ``local_data`` maps hub ids to ``{"files": {split: file or [files]}, "aliases": [...]}``;
    ``{name}`` in a file name is replaced by ``name`` and globs are expanded (sorted). Returns
    ``(format, {split: files})``, the format (``json``, ``csv`` or ``parquet``) being both a
    :func:`read_records` source and a ``datasets.load_dataset`` builder, or None when ``hub_id``
    has no entry. Raises ValueError naming a split the entry lacks, a glob that matches nothing or
    files of mixed formats.
    """
    entry = local_entry(local_data, hub_id)
    if entry is None:
        return None
    files = entry.get("files") or {}
    resolved: dict[str, list[str]] = {}
    for split in splits:
        if split not in files:
            raise ValueError(f"local_data.{hub_id} has no files for split {split!r} (it has {sorted(files)})")
        patterns = files[split] if isinstance(files[split], list) else [files[split]]
        resolved[split] = []
        for pattern in patterns:
            pattern = str(pattern).replace("{name}", name or "")
            if any(c in pattern for c in _GLOB_CHARS):
                matches = sorted(glob.glob(pattern))
                if not matches:
                    raise ValueError(f"local_data.{hub_id}: {pattern!r} (split {split!r}) matches no file")
                resolved[split] += matches
            else:
                resolved[split].append(pattern)
    suffixes = {Path(f).suffix for paths in resolved.values() for f in paths}
    formats = {FORMATS.get(suffix) for suffix in suffixes}
    if len(formats) != 1 or None in formats:
        raise ValueError(f"local_data.{hub_id}: files must all be one of {sorted(FORMATS)}, got {sorted(suffixes)}")
    return formats.pop(), resolved
