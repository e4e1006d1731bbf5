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

:func:`load_texts` turns a spec into :class:`Texts`, a sequence of strings that also carries one
id per text (which source record it came from) and the spec.

The keys, what each must be and its default are described in the JSON schema :data:`SCHEMA`
(``mathneuro/dataset.schema.yaml``; the workflow's config schema checks its ``datasets`` with it
too): ``source`` (``hf``, ``json``, ``csv``, ``parquet`` or ``synthetic``), the source's
own keys (``path``; ``name``, ``split``, ``cache_dir``, ``revision`` for ``hf``; ``columns`` for
``csv``; ``task``, ``split``, ``n_train``, ``n_test``, ``data_seed`` for ``synthetic``) and
``template``, ``n``, ``seed``, ``replace``, ``id_field``. A key set to ``null``/``None`` counts as
absent. :func:`validate_spec` checks a spec against it.

Where the records come from is :mod:`mathneuro.records`: files (values as written: CSV values stay
strings, JSON values keep their types); for an ``hf`` spec whose hub id has an entry in
``load_texts(..., local_data=...)``, that local copy, read the same way; any other ``hf`` spec
through ``datasets.load_dataset``; ``synthetic`` specs from :func:`mathneuro.synthetic.generate`.
What is this module's own:

- the draw: every record in order, or ``n`` of them under ``random.Random(seed)``: with replacement
  ``rng.choices(range(size), k=n)``, without ``rng.sample(range(size), n)``. Same spec and same
  data, same texts.
- held-out texts of a file spec (``heldout``): another file, or a share of the file's records
  (:func:`heldout_rows`); the identification (``part: identification``, the default) draws from
  the other records only, ``part: heldout`` reads the held-out texts (the bits-per-byte tasks,
  ``mathneuro.evaluate.heldout_spec``).
- the ids: ``id_field``'s value, else ``"<split>:<row>"`` (``"<config>/<split>:<row>"`` when
  ``name`` lists configs) and ``"<file name>:<row>"`` (the whole path where two files share a
  name), rows counted from 0 within the split or file; a record drawn twice has one id.
- the templates: :meth:`str.format` over the record's fields, by default ``"{text}"`` (for
  ``synthetic``, the toy model's training text). File records also have ``subject`` (the file name
  without its extension and a trailing ``_test``/``_dev``/``_val``, MMLU's naming) unless they
  have their own, and records with a list ``choices`` and an integer ``answer`` (MMLU's hub format)
  ``answer_letter`` (``A``...).

Errors: :func:`validate_spec` raises ``ValueError`` naming the bad key before anything is read; a
missing file or a glob matching nothing raises ``FileNotFoundError`` naming the path or pattern; a
template or ``id_field`` naming a missing field, or a source with no records, raises ``ValueError``.
"""

from __future__ import annotations

import copy
import functools
import os
import random
import string
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import yaml

from mathneuro.records import config_names, local_entry, local_files, open_table, split_names

__all__ = ["Texts", "load_texts", "validate_spec", "config_names", "local_entry", "local_files", "split_names",
           "heldout_rows", "file_pattern", "SCHEMA", "SOURCES"]

SCHEMA = Path(__file__).with_name("dataset.schema.yaml")
_DEFAULT_TEMPLATE = "{text}"

Record = Mapping[str, Any]


@functools.cache
def _schema() -> dict[str, Any]:
    """The dataset spec schema, as loaded from :data:`SCHEMA`."""
    return yaml.load(SCHEMA.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


SOURCES = tuple(_schema()["properties"]["source"]["enum"])


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
    # per text, how many leading characters are its prompt: all but the template's last field (a
    # synthetic spec's: the task's prompt); for training on the answers only (load_texts(prompts=True))
    prompt_chars: tuple[int, ...] | None = None

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
    """Check a dataset spec against :data:`SCHEMA`, and that its template names its fields, without
    reading any data; ``ValueError`` naming the offending key and value. Needs ``jsonschema``.

    Integers are Python's (not ``True``, not ``2.0``), lists may be tuples and paths ``os.PathLike``.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"dataset spec must be a mapping, got {type(spec).__name__}")
    plain = {key: os.fspath(value) if isinstance(value, os.PathLike) else value for key, value in spec.items()}
    problems = sorted(filter(None, (_problem(error, plain) for error in _validator().iter_errors(plain))))
    if problems:
        raise ValueError(f"dataset spec: {problems[0][2]}")
    _check_template(plain.get("template"))


@functools.cache
def _validator() -> Any:
    """A validator of :data:`SCHEMA` whose integers and arrays are Python's."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    types_ = base.TYPE_CHECKER.redefine_many({
        "integer": lambda _, value: isinstance(value, int) and not isinstance(value, bool),
        "array": lambda _, value: isinstance(value, (list, tuple)),
    })
    return jsonschema.validators.extend(base, type_checker=types_)(_schema())


def _properties(source: Any) -> dict[str, Any]:
    """The keys a spec of ``source`` may set, with their schemas (a branch's own, and those of the
    definition it refers to: every file source's)."""
    if source not in SOURCES:
        return dict(_schema()["properties"])
    branch = _schema()["$defs"][source]
    ref = branch.get("$ref")
    shared = _schema()["$defs"][ref.removeprefix("#/$defs/")]["properties"] if ref else {}
    return {**_schema()["properties"], **shared, **branch.get("properties", {})}


def _problem(error: Any, spec: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """``(rank, key order, message)`` of a schema error: the source first, then unknown keys,
    keys of another source and other keys' values (a missing key's value is None). None for the
    echo of a source's failing branch (its keys count as unevaluated: the branch says why)."""
    keys = _schema()["propertyNames"]["enum"]
    if error.relative_schema_path[0] == "propertyNames":
        return 1, 0, f"unknown key(s) {sorted(str(k) for k in spec if k not in keys)}; allowed: {sorted(keys)}"
    allowed = _properties(spec.get("source"))
    if error.validator == "unevaluatedProperties":
        misplaced = sorted(str(k) for k in spec if k not in allowed and spec[k] is not None)
        if not misplaced:
            return None
        return 2, 0, (f"key(s) {misplaced} do not apply to source {spec.get('source')!r}; "
                      f"allowed for it: {sorted(allowed)}")
    key = error.absolute_path[0] if error.absolute_path else next(k for k in error.validator_value if k not in spec)
    message = f"{key!r} must be {_title(allowed[key])}, got {spec.get(key)!r}"
    return (0 if key == "source" else 3), keys.index(key), message


def _title(subschema: Mapping[str, Any]) -> str:
    """A key's ``title``, behind a ``$ref`` to ``$defs`` if there is one."""
    ref = subschema.get("$ref")
    return _title(_schema()["$defs"][ref.removeprefix("#/$defs/")]) if ref else subschema["title"]


def _check_template(template: str | None) -> None:
    """What the schema cannot say: the template is a format string with named fields only."""
    if template is not None and any(f == "" or f.isdigit() for f in _template_fields(template)):
        raise ValueError(f"dataset spec: 'template' must name its fields, e.g. '{{question}}'; got {template!r}")


def _template_fields(template: str) -> list[str]:
    """The top-level field names a format string uses ('a' for '{a.b[0]!r}')."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise ValueError(f"dataset spec: 'template' is not a valid format string ({err}): {template!r}") from err
    return [name.split(".", 1)[0].split("[", 1)[0] for _, name, _, _ in parsed if name is not None]


# --------------------------------------------------------------------------- loading


def load_texts(
    spec: Mapping[str, Any],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    local_data: Mapping[str, Any] | None = None,
    prompts: bool = False,
) -> Texts:
    """Load, sample and format the texts a dataset spec describes.

    ``base_dir``, if given, anchors relative file paths (and a relative local
    ``hf`` folder) instead of the working directory. ``local_data`` maps hub ids
    to local files (:func:`local_files`). With ``prompts``, each text's prompt length
    (``Texts.prompt_chars``): the template rendered up to its last field, so that what
    the last field renders (the answer of ``"Question: {question}\nAnswer: {answer}"``)
    is the rest. See the module docstring for the spec keys.
    """
    validate_spec(spec)
    table, pool = _part(spec, base_dir, local_data)
    if table.size == 0 or not pool:
        raise ValueError(f"dataset spec {dict(spec)!r}: the source has no records")
    indices = [pool[i] for i in _sample_indices(len(pool), spec.get("n"), _get(spec, "seed", 0),
                                                _get(spec, "replace", True))]
    records = [_with_letter(record) for record in table.rows(indices)]
    render = _renderer(spec)
    texts = tuple(render(record) for record in records)
    id_field = spec.get("id_field")
    if id_field is None:
        ids = [table.label(i) for i in indices]
    else:
        ids = [str(_field(record, id_field, "id_field")) for record in records]
    prompt_chars = tuple(map(len, map(_prompt_renderer(spec), records))) if prompts else None
    return Texts(texts=texts, ids=ids, spec=types.MappingProxyType(copy.deepcopy(dict(spec))), prompt_chars=prompt_chars)


def heldout_rows(size: int, fraction: float, seed: int | None = 0) -> list[int]:
    """The rows of ``size`` records that a ``heldout: {fraction, seed}`` holds out, sorted."""
    return sorted(random.Random(0 if seed is None else seed).sample(range(size), round(fraction * size)))


def _part(spec: Mapping[str, Any], base_dir, local_data) -> tuple[Any, list[int]]:
    """The records a spec reads and the rows it may draw from: with ``heldout``, the held-out
    texts (``part: heldout``) or every other record (the identification's); else every record."""
    held, part = spec.get("heldout") or {}, _get(spec, "part", "identification")
    if part == "heldout" and not held:
        raise ValueError(f"dataset spec {dict(spec)!r}: part 'heldout' needs `heldout` (the held-out texts)")
    if part == "heldout" and "path" in held:
        table = open_table({**spec, "path": held["path"]}, base_dir, local_data)
        return table, list(range(table.size))
    table = open_table(spec, base_dir, local_data)
    if "fraction" not in held:
        return table, list(range(table.size))
    rows = heldout_rows(table.size, held["fraction"], held.get("seed"))
    if part == "heldout":
        return table, rows
    kept = set(rows)
    return table, [i for i in range(table.size) if i not in kept]


def file_pattern(spec: Mapping[str, Any]) -> str:
    """The file or glob a file spec reads: its held-out texts' own file for ``part: heldout``."""
    held = spec.get("heldout") or {}
    return str(held["path"] if spec.get("part") == "heldout" and "path" in held else spec["path"])


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


def _prompt_renderer(spec: Mapping[str, Any]) -> Callable[[Record], str]:
    """Record -> its prompt: the template up to its last field (a synthetic spec's default: the
    task's prompt and the space before its answer; the default template: nothing)."""
    template = spec.get("template")
    if template is None and spec["source"] == "synthetic":
        from mathneuro import synthetic

        return lambda record: synthetic.prompt_text(spec["task"], record) + " "
    template = _DEFAULT_TEMPLATE if template is None else template
    parsed = list(string.Formatter().parse(template))
    last = max((i for i, (_, name, _, _) in enumerate(parsed) if name is not None), default=None)
    if last is None:
        return lambda record: template
    # each part before the last field: its literal text, then its field as written; then the
    # literal text just before the last field
    prefix = "".join(text + ("" if name is None else "{" + name + (f"!{conv}" if conv else "")
                                                     + (f":{fmt}" if fmt else "") + "}")
                     for text, name, fmt, conv in parsed[:last]) + parsed[last][0]
    fields = _template_fields(prefix)
    return lambda record: _render(prefix, fields, record)


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
        raise ValueError(f"dataset spec: {key!r} uses field {name!r}, but the records have fields {sorted(record)}")
    return record[name]


def _with_letter(record: Record) -> Record:
    """MMLU-style records (``choices`` list, integer ``answer``) gain ``answer_letter``."""
    answer = record.get("answer")
    if isinstance(record.get("choices"), list) and isinstance(answer, int) and not isinstance(answer, bool):
        if 0 <= answer < 26 and "answer_letter" not in record:
            return {**record, "answer_letter": chr(ord("A") + answer)}
    return record
