"""Load the text samples that MathNeuro collects statistics on.

A *dataset spec* is a plain mapping, as written in the workflow's YAML config::

    math:
      source: json
      path: ../shared/data/gsm8k/train.jsonl
      template: "Question: {question}\\nAnswer: {answer}"
      n: 500
      seed: 0
    non_math:
      source: csv
      path: ../shared/data/mmlu/test/*_test.csv
      columns: [question, A, B, C, D, answer]
      template: "{question}\\nA. {A}\\nB. {B}\\nC. {C}\\nD. {D}\\nAnswer: {answer}"
      n: 500
      seed: 0

:func:`load_texts` turns a spec into :class:`Texts`, a sequence of strings that
also carries one id per text (which source record it came from) and the spec.

Spec keys (a key set to ``null``/``None`` counts as absent):

``source`` (required)
    ``hf`` (``datasets.load_dataset``), ``json``, ``csv``, ``parquet`` or
    ``synthetic`` (:func:`mathneuro.synthetic.generate`).
``path``
    Required for ``hf`` (hub id or a local dataset folder) and for the file
    sources (one file, or a glob such as ``mmlu/test/*_test.csv``; matches are
    read in sorted order). Relative paths are relative to the working
    directory, or to ``base_dir`` when :func:`load_texts` is given one.
``name``
    ``hf`` only: the dataset config (``main`` for ``openai/gsm8k``), or a list of
    configs whose splits are read one after the other as one data set (MATH's
    subjects: ``EleutherAI/hendrycks_math`` has one config per subject). With a
    list, default ids are ``"<config>/<split>:<row>"``.
``split``
    ``hf`` and ``synthetic`` only: which split to read; default ``train``.
``cache_dir``
    ``hf`` only: the datasets cache folder (default: the ``datasets`` default).
``revision``
    ``hf`` only: the hub revision (a commit hash pins the data; default: the latest).
``columns``
    ``csv`` only: column names for a CSV file *without* a header row. Without
    ``columns`` the first row is the header.
``task``, ``n_train``, ``n_test``, ``data_seed``
    ``synthetic`` only: ``task`` (``math``, ``reading``, ``facts``), ``n_train``
    and ``n_test`` (both required: the train records depend on ``n_test``) and
    ``data_seed`` (default 0) are passed to
    ``generate(task, n_train=..., n_test=..., seed=data_seed)``; use the values
    the toy model was trained with to get its exact records. They fix *which*
    records exist; ``n``/``seed``/``replace`` then sample from them.
``template``
    A :meth:`str.format` template over the record's fields. Default: for
    ``synthetic``, ``synthetic.training_text(task, record)`` (the toy model's
    training format); otherwise ``"{text}"``.
    File records also get ``subject``: the file name without its extension and
    without a trailing ``_test``/``_dev``/``_val`` (MMLU's naming), unless the
    record already has a ``subject``. Records with a list ``choices`` and an
    integer ``answer`` (MMLU's hub format) also get ``answer_letter`` (``A``...).
``n``
    How many texts to draw (int >= 1). Absent: every record, in order.
``seed``
    Integer seed for the draw; default 0. Sampling uses ``random.Random(seed)``:
    with replacement ``rng.choices(range(size), k=n)``, without
    ``rng.sample(range(size), n)``. Same spec and same data => same texts.
``replace``
    Draw ``n`` records with replacement (default ``True``, as the paper does).
``id_field``
    A record field whose value becomes the id. Default ids are
    ``"<split>:<row>"`` for ``hf``/``synthetic`` and ``"<file name>:<row>"``
    for files (row counted from 0 within the split or file, header excluded),
    so duplicates drawn with replacement share an id.

Local copies of hub data sets: ``load_texts(spec, local_data=...)`` reads an
``hf`` spec whose ``path`` (a hub id) has an entry in ``local_data`` from local
files in the hub's record format instead of the hub (see :func:`local_files`);
the same table redirects lm-eval tasks (``mathneuro.tasks``).

Errors: :func:`validate_spec` raises ``ValueError`` naming the bad key before
anything is read; a missing file or a glob matching nothing raises
``FileNotFoundError`` naming the path or pattern; a template or ``id_field``
naming a missing field, or a source with no records, raises ``ValueError``.
"""

from __future__ import annotations

import bisect
import copy
import csv
import glob
import itertools
import json
import os
import random
import string
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

__all__ = ["Texts", "load_texts", "validate_spec", "local_files", "SOURCES"]

SOURCES = ("hf", "json", "csv", "parquet", "synthetic")
_FILE_SOURCES = frozenset({"json", "csv", "parquet"})
_COMMON_KEYS = frozenset({"source", "template", "n", "seed", "replace", "id_field"})
_SOURCE_KEYS: Mapping[str, frozenset[str]] = types.MappingProxyType(
    {
        "hf": frozenset({"path", "name", "split", "cache_dir", "revision"}),
        "json": frozenset({"path"}),
        "csv": frozenset({"path", "columns"}),
        "parquet": frozenset({"path"}),
        "synthetic": frozenset({"task", "split", "n_train", "n_test", "data_seed"}),
    }
)
_ALL_KEYS = _COMMON_KEYS.union(*_SOURCE_KEYS.values())
_DEFAULT_TEMPLATE = "{text}"
_SUBJECT_SUFFIXES = ("_test", "_dev", "_val")
_GLOB_CHARS = frozenset("*?[")

Record = Mapping[str, Any]


@dataclass(frozen=True, repr=False)
class Texts(Sequence[str]):
    """The texts drawn from one dataset spec, with one id per text.

    A ``Sequence[str]``: ``len``, iteration and integer indexing give the
    texts; a slice gives a plain ``list[str]`` (what tokenizers expect).
    ``ids[i]`` names the source record of ``texts[i]``; equal ids mean the same
    record was drawn twice. ``spec`` is a read-only copy of the spec.
    """

    texts: tuple[str, ...]
    ids: list[str]
    spec: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.ids):
            raise ValueError(f"Texts: {len(self.texts)} texts but {len(self.ids)} ids")

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return list(self.texts[index])
        return self.texts[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)

    def __repr__(self) -> str:
        return f"Texts(n={len(self)}, unique={len(set(self.ids))}, source={self.spec.get('source')!r})"


# --------------------------------------------------------------------------- validation


def validate_spec(spec: Any) -> None:
    """Check a dataset spec without reading any data; raise ``ValueError`` if bad.

    The message names the offending key and value.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"dataset spec must be a mapping, got {type(spec).__name__}")
    source = spec.get("source")
    if source not in SOURCES:
        raise ValueError(f"dataset spec: 'source' must be one of {list(SOURCES)}, got {source!r}")
    _check_keys(spec, source)
    _check_source_keys(spec, source)
    _check_template(spec.get("template"))
    _check_sampling(spec)


def _check_keys(spec: Mapping[str, Any], source: str) -> None:
    """Reject unknown keys, and keys that belong to another source."""
    unknown = sorted(str(k) for k in spec if k not in _ALL_KEYS)
    if unknown:
        raise ValueError(f"dataset spec: unknown key(s) {unknown}; allowed: {sorted(_ALL_KEYS)}")
    allowed = _COMMON_KEYS | _SOURCE_KEYS[source]
    misplaced = sorted(k for k in spec if k not in allowed and spec[k] is not None)
    if misplaced:
        raise ValueError(
            f"dataset spec: key(s) {misplaced} do not apply to source {source!r}; "
            f"allowed for it: {sorted(allowed)}"
        )


def _check_source_keys(spec: Mapping[str, Any], source: str) -> None:
    """Check the keys that only some sources use."""
    if source == "synthetic":
        _require_str(spec, "task")
        if spec.get("split") not in (None, "train", "test"):
            raise ValueError(f"dataset spec: 'split' for synthetic must be 'train' or 'test', got {spec['split']!r}")
        for key in ("n_train", "n_test"):
            if spec.get(key) is None:
                raise ValueError(f"dataset spec: synthetic needs {key!r} (records generate() makes for that split)")
            _check_int(spec, key, minimum=0)
        _check_int(spec, "data_seed")
        return
    path = spec.get("path")
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"dataset spec: source {source!r} needs 'path' (a file, glob or dataset name), got {path!r}")
    for key in ("split", "cache_dir", "revision"):
        if spec.get(key) is not None and not isinstance(spec[key], (str, os.PathLike)):
            raise ValueError(f"dataset spec: {key!r} must be a string, got {spec[key]!r}")
    name = spec.get("name")
    if isinstance(name, list):
        if not name or not all(isinstance(n, str) and n for n in name) or len(set(name)) != len(name):
            raise ValueError(f"dataset spec: 'name' as a list must hold distinct config names, got {name!r}")
    elif name is not None and not isinstance(name, str):
        raise ValueError(f"dataset spec: 'name' must be a config name or a list of them, got {name!r}")
    _check_columns(spec.get("columns"))


def _check_columns(columns: Any) -> None:
    """``columns`` must be a list of distinct, non-empty strings."""
    if columns is None:
        return
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
        raise ValueError(f"dataset spec: 'columns' must be a non-empty list of names, got {columns!r}")
    if not all(isinstance(c, str) and c for c in columns):
        raise ValueError(f"dataset spec: 'columns' must hold non-empty strings, got {columns!r}")
    if len(set(columns)) != len(columns):
        raise ValueError(f"dataset spec: 'columns' has duplicate names: {columns!r}")


def _check_template(template: Any) -> None:
    """The template must be a format string with named fields only."""
    if template is None:
        return
    if not isinstance(template, str):
        raise ValueError(f"dataset spec: 'template' must be a string, got {type(template).__name__} {template!r}")
    fields = _template_fields(template)
    positional = [f for f in fields if f == "" or f.isdigit()]
    if positional:
        raise ValueError(f"dataset spec: 'template' must name its fields, e.g. '{{question}}'; got {template!r}")


def _check_sampling(spec: Mapping[str, Any]) -> None:
    """Check ``n``, ``seed``, ``replace`` and ``id_field``."""
    _check_int(spec, "n", minimum=1)
    _check_int(spec, "seed")
    if spec.get("replace") is not None and not isinstance(spec["replace"], bool):
        raise ValueError(f"dataset spec: 'replace' must be true or false, got {spec['replace']!r}")
    if spec.get("id_field") is not None:
        _require_str(spec, "id_field")


def _check_int(spec: Mapping[str, Any], key: str, minimum: int | None = None) -> None:
    """An optional integer key (bools are not integers here)."""
    value = spec.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"dataset spec: {key!r} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"dataset spec: {key!r} must be >= {minimum}, got {value!r}")


def _require_str(spec: Mapping[str, Any], key: str) -> None:
    """A required non-empty string key."""
    value = spec.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"dataset spec: {key!r} must be a non-empty string, got {value!r}")


def _template_fields(template: str) -> list[str]:
    """The top-level field names a format string uses ('a' for '{a.b[0]!r}')."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise ValueError(f"dataset spec: 'template' is not a valid format string ({err}): {template!r}") from err
    names = []
    for _, name, _, _ in parsed:
        if name is not None:
            names.append(name.split(".", 1)[0].split("[", 1)[0])
    return names


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class _Table:
    """Records of one source: ``size`` rows, ``rows(indices)`` reads them."""

    size: int
    rows: Callable[[Sequence[int]], list[Record]]
    label: Callable[[int], str]


def load_texts(
    spec: Mapping[str, Any],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    local_data: Mapping[str, Any] | None = None,
) -> Texts:
    """Load, sample and format the texts a dataset spec describes.

    ``base_dir``, if given, anchors relative file paths (and a relative local
    ``hf`` folder) instead of the working directory. ``local_data`` maps hub ids
    to local files (:func:`local_files`). See the module docstring for the spec keys.
    """
    validate_spec(spec)
    table = _open_table(spec, base_dir, local_data or {})
    if table.size == 0:
        raise ValueError(f"dataset spec {dict(spec)!r}: the source has no records")
    indices = _sample_indices(table.size, spec.get("n"), _get(spec, "seed", 0), _get(spec, "replace", True))
    records = [_with_letter(record) for record in table.rows(indices)]
    render = _renderer(spec)
    texts = tuple(render(record) for record in records)
    id_field = spec.get("id_field")
    if id_field is None:
        ids = [table.label(i) for i in indices]
    else:
        ids = [str(_field(record, id_field, "id_field")) for record in records]
    return Texts(texts=texts, ids=ids, spec=types.MappingProxyType(copy.deepcopy(dict(spec))))


def _get(spec: Mapping[str, Any], key: str, default: Any) -> Any:
    """``spec[key]``, or ``default`` when absent or None."""
    value = spec.get(key)
    return default if value is None else value


def _sample_indices(size: int, n: int | None, seed: int, replace: bool) -> list[int]:
    """Row indices to use: all in order, or ``n`` drawn under ``random.Random(seed)``."""
    if n is None:
        return list(range(size))
    rng = random.Random(seed)
    if replace:
        return rng.choices(range(size), k=n)
    if n > size:
        raise ValueError(f"dataset spec: n={n} > {size} records available; set replace: true or lower n")
    return rng.sample(range(size), n)


def _renderer(spec: Mapping[str, Any]) -> Callable[[Record], str]:
    """Record -> text: the spec's template, else the default for its source."""
    template = spec.get("template")
    if template is None and spec["source"] == "synthetic":
        from mathneuro import synthetic

        return lambda record: synthetic.training_text(spec["task"], record)
    template = _DEFAULT_TEMPLATE if template is None else template
    fields = _template_fields(template)
    return lambda record: _render(template, fields, record)


def _render(template: str, fields: Sequence[str], record: Record) -> str:
    """Format one record, naming the missing field if there is one."""
    for name in fields:
        _field(record, name, "template")
    try:
        return template.format_map(record)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as err:
        raise ValueError(
            f"dataset spec: 'template' {template!r} failed on a record with fields {sorted(record)}: {err!r}"
        ) from err


def _field(record: Record, name: str, key: str) -> Any:
    """``record[name]``, or a ``ValueError`` listing the fields it has."""
    if name not in record:
        raise ValueError(
            f"dataset spec: {key!r} uses field {name!r}, but the records have fields {sorted(record)}"
        )
    return record[name]


def _with_letter(record: Record) -> Record:
    """MMLU-style records (``choices`` list, integer ``answer``) gain ``answer_letter``."""
    answer = record.get("answer")
    if isinstance(record.get("choices"), list) and isinstance(answer, int) and not isinstance(answer, bool):
        if 0 <= answer < 26 and "answer_letter" not in record:
            return {**record, "answer_letter": chr(ord("A") + answer)}
    return record


def _open_table(spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None,
                local_data: Mapping[str, Any]) -> _Table:
    """Dispatch on ``source``."""
    source = spec["source"]
    if source == "synthetic":
        return _synthetic_table(spec)
    if source == "hf":
        return _hf_table(spec, base_dir, local_data)
    return _file_table(spec, base_dir)


def _synthetic_table(spec: Mapping[str, Any]) -> _Table:
    """Records from the project's synthetic tasks (imported lazily)."""
    from mathneuro import synthetic

    splits = synthetic.generate(
        spec["task"], n_train=spec["n_train"], n_test=spec["n_test"], seed=_get(spec, "data_seed", 0)
    )
    split = _get(spec, "split", "train")
    records = list(splits[split])
    return _Table(size=len(records), rows=_list_rows(records), label=lambda i: f"{split}:{i}")


def config_names(spec: Mapping[str, Any]) -> list[str | None]:
    """The dataset configs an ``hf`` spec reads, in order (``[None]``: the default one)."""
    name = spec.get("name")
    return list(name) if isinstance(name, list) else [name]


def _hf_table(spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None,
              local_data: Mapping[str, Any]) -> _Table:
    """A split of a Hugging Face dataset (hub id, local folder or local copy), read lazily; of
    several configs, their splits one after the other."""
    import datasets

    path = str(spec["path"])
    if base_dir is not None and not os.path.isabs(path) and Path(base_dir, path).exists():
        path = str(Path(base_dir, path))
    split = _get(spec, "split", "train")
    cache_dir = None if spec.get("cache_dir") is None else str(spec["cache_dir"])

    def load(name: str | None):
        local = local_files(local_data, path, name, split_names(split))
        if local is not None:
            builder, files = local
            return datasets.load_dataset(builder, data_files=files, split=split, cache_dir=cache_dir)
        return datasets.load_dataset(path, name, split=split, cache_dir=cache_dir, revision=spec.get("revision"))

    names = config_names(spec)
    parts = [load(name) for name in names]
    dataset = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
    starts = list(itertools.accumulate([0] + [len(p) for p in parts]))

    def rows(indices: Sequence[int]) -> list[Record]:
        return dataset.select(list(indices)).to_list() if indices else []

    def label(i: int) -> str:
        if not isinstance(spec.get("name"), list):
            return f"{split}:{i}"
        part = bisect.bisect_right(starts, i) - 1
        return f"{names[part]}/{split}:{i - starts[part]}"

    return _Table(size=len(dataset), rows=rows, label=label)


# --------------------------------------------------------------------------- local copies of hub data

_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


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
    ``(builder, {split: files})`` for ``datasets.load_dataset(builder, data_files=...)``, or None
    when ``hub_id`` has no entry. Raises ValueError naming a split the entry lacks, a glob that
    matches nothing or files of mixed formats.
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
    builders = {_BUILDERS.get(suffix) for suffix in suffixes}
    if len(builders) != 1 or None in builders:
        raise ValueError(f"local_data.{hub_id}: files must all be one of {sorted(_BUILDERS)}, got {sorted(suffixes)}")
    return builders.pop(), resolved


def _list_rows(records: Sequence[Record]) -> Callable[[Sequence[int]], list[Record]]:
    """Row reader over records already in memory."""
    return lambda indices: [records[i] for i in indices]


# --------------------------------------------------------------------------- files


def _file_table(spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None) -> _Table:
    """Concatenate the records of every file that ``path`` names."""
    files = _resolve_files(str(spec["path"]), base_dir)
    names = [f.name for f in files]
    labels_of = names if len(set(names)) == len(names) else [str(f) for f in files]
    records: list[Record] = []
    labels: list[str] = []
    for file, file_label in zip(files, labels_of):
        rows = _read_file(spec, file)
        subject = _subject(file)
        records.extend(row if "subject" in row else {**row, "subject": subject} for row in rows)
        labels.extend(f"{file_label}:{i}" for i in range(len(rows)))
    return _Table(size=len(records), rows=_list_rows(records), label=labels.__getitem__)


def _resolve_files(path: str, base_dir: str | os.PathLike[str] | None) -> list[Path]:
    """The file, or the sorted matches of a glob; ``FileNotFoundError`` if none."""
    full = os.path.join(base_dir, path) if base_dir is not None else path
    if any(c in path for c in _GLOB_CHARS):
        matches = sorted(Path(p) for p in glob.glob(full, recursive=True) if os.path.isfile(p))
        if not matches:
            raise FileNotFoundError(f"dataset spec: glob 'path' {full!r} matched no files")
        return matches
    if not os.path.isfile(full):
        raise FileNotFoundError(f"dataset spec: 'path' file not found: {full!r}")
    return [Path(full)]


def _subject(file: Path) -> str:
    """MMLU-style subject: file stem without a trailing _test/_dev/_val."""
    stem = file.name.split(".", 1)[0]
    for suffix in _SUBJECT_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def _read_file(spec: Mapping[str, Any], file: Path) -> list[dict[str, Any]]:
    """Read one file of the spec's source as a list of records."""
    source = spec["source"]
    if source == "csv":
        return _read_csv(file, spec.get("columns"))
    if source == "json":
        return _read_json(file)
    return _read_parquet(file)


def _read_csv(file: Path, columns: Sequence[str] | None) -> list[dict[str, Any]]:
    """CSV via the standard library, every value a string (no NA guessing)."""
    with open(file, newline="", encoding="utf-8-sig") as handle:
        if columns is None:
            return [dict(row) for row in csv.DictReader(handle)]
        records = []
        for line_no, row in enumerate(csv.reader(handle), start=1):
            if len(row) != len(columns):
                raise ValueError(
                    f"{file}: row {line_no} has {len(row)} values but 'columns' names {len(columns)}: {list(columns)}"
                )
            records.append(dict(zip(columns, row)))
        return records


def _read_json(file: Path) -> list[dict[str, Any]]:
    """JSON lines (one object per line), or one JSON array of objects."""
    text = file.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        records = json.loads(text)
    else:
        records = []
        # JSON lines end at "\n" only: str.splitlines() would also split inside a string at U+0085
        # (NEL) or U+2028, which some of MMLU's questions contain
        for line_no, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{file}: line {line_no} is not valid JSON: {err}") from err
    if not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{file}: every JSON record must be an object")
    return records


def _read_parquet(file: Path) -> list[dict[str, Any]]:
    """A Parquet file's rows as dicts."""
    import pyarrow.parquet as pq

    return pq.read_table(file).to_pylist()


# --------------------------------------------------------------------------- MMLU's original release

MMLU_RELEASE_SPLITS = {"dev": "dev", "val": "validation", "test": "test"}  # release folder -> hub split


def mmlu_release_records(release_dir: str | os.PathLike[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """MMLU's original release as ``cais/mmlu`` hub records: ``{hub split: {subject: records}}``.

    The release has folders ``dev/``, ``val/``, ``test/`` of header-less CSVs
    ``<subject>_<split>.csv`` (question, A, B, C, D, answer letter); a hub record is
    ``{"question", "subject", "choices": [A, B, C, D], "answer": index of the letter}``.
    """
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for folder, split in MMLU_RELEASE_SPLITS.items():
        files = sorted(Path(release_dir, folder).glob(f"*_{folder}.csv"))
        if not files:
            raise FileNotFoundError(f"MMLU release {release_dir}: no {folder}/*_{folder}.csv files")
        out[split] = {}
        for file in files:
            subject = file.name[: -len(f"_{folder}.csv")]
            rows = _read_csv(file, ["question", "A", "B", "C", "D", "answer"])
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
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
