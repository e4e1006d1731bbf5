"""Config files that build on others: a file's ``base`` names the files it extends.

``compose`` merges each file over its bases (in order, paths relative to the file), then the
files given in order, then command-line values, the way Snakemake merges several
``--configfile``s: mappings merge key by key, every other value (lists included) is replaced.
A file's ``replace`` lists the keys (dotted for nested ones: ``models``, ``evaluation.suites``)
whose mappings it replaces instead of merging into its bases': what the base has there and the
file does not is gone (a study of another model than its base's, without the base's model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml


def merge(into: dict, other: Mapping) -> dict:
    """Merge ``other`` into ``into`` in place (mappings recursively, the rest replaced); return it."""
    for key, value in other.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def load(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The config file at ``path`` merged over the files its ``base`` names, recursively."""
    path = Path(path).resolve()
    if path in _chain:
        raise ValueError(f"base: {path} builds on itself ({' -> '.join(map(str, _chain + (path,)))})")
    if not path.is_file():
        raise ValueError(f"base: no config file {path}" + (f" (named by {_chain[-1]})" if _chain else ""))
    data = yaml.safe_load(path.read_text()) or {}
    bases = data.pop("base", [])
    replaced = data.pop("replace", [])
    merged: dict[str, Any] = {}
    for base in [bases] if isinstance(bases, str) else bases:
        merge(merged, load(path.parent / base, _chain + (path,)))
    for key in [replaced] if isinstance(replaced, str) else replaced:
        _drop(merged, key, data, path)
    return merge(merged, data)


def _drop(merged: dict[str, Any], dotted: str, data: Mapping[str, Any], path: Path) -> None:
    """Remove ``dotted`` (``a.b``) from ``merged`` for ``replace``; the file must set it itself."""
    *parents, last = dotted.split(".")
    here, mine = merged, data
    for key in parents:
        here, mine = here.get(key, {}), (mine or {}).get(key)
    if not isinstance(mine, Mapping) or last not in mine:
        raise ValueError(f"{path}: replace names {dotted!r}, which the file does not set")
    if isinstance(here, dict):
        here.pop(last, None)


def compose(paths: Iterable[str | Path], overrides: Mapping | None = None) -> dict[str, Any]:
    """Every file (with its bases) merged in order, then ``overrides`` (``--config`` values). A
    top-level section set to null is absent: a file turns off a section its base has."""
    merged: dict[str, Any] = {}
    for path in paths:
        merge(merged, load(path))
    merged = merge(merged, dict(overrides or {}))
    return {key: value for key, value in merged.items() if value is not None}


# Checks of what a config names outside itself, made before any job ------------------------------
#
# Snakemake falls back on outputs that already exist when the jobs that would remake them cannot be
# built (a missing data file): in a finished study such a config would leave the old tables as its
# results ("Nothing to be done"). So the workflow checks, before building the DAG, that every file
# a data spec or `local_data` names exists and is not empty (or is one the workflow writes), that a
# data set's template fields are in its first record, and that every task a suite names is known.
# Each check returns messages naming the config key and the file, field or task; [] when all is well.

FILE_SOURCES = ("json", "csv", "parquet")
_GLOB = frozenset("*?[")


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in _GLOB)


def _files(pattern: str, made: Mapping[str, Any]) -> list[str]:
    """The files a path or glob names (sorted matches of a glob; a plain path as it is), with the
    files the workflow writes that a glob would match but that do not exist yet."""
    import fnmatch
    import glob

    if not _is_glob(pattern):
        return [pattern]
    found = {p for p in glob.glob(pattern, recursive=True) if Path(p).is_file()}
    found |= {p for p in made if fnmatch.fnmatch(p, pattern)}
    return sorted(found)


def _file_problem(path: str, made: Mapping[str, Any]) -> str | None:
    """Why ``path`` cannot be read as data, or None: missing or empty, unless the workflow writes it."""
    if path in made:
        return None if made[path] is not None else "is written by the workflow without records"
    file = Path(path)
    if not file.exists():
        return "does not exist"
    if file.is_dir():
        return None if any(file.iterdir()) else "is an empty folder"
    if file.stat().st_size == 0:
        return "is empty"
    return None


def first_record(source: str, path: str, columns: list[str] | None = None) -> dict[str, Any] | None:
    """The first record of one data file (``source``: json, csv or parquet), read cheaply; None
    when the file has none."""
    import csv
    import json

    file = Path(path)
    if source == "csv":
        with file.open(newline="", encoding="utf-8-sig") as handle:
            rows = csv.reader(handle) if columns else csv.DictReader(handle)
            row = next(iter(rows), None)
        if row is None:
            return None
        return dict(zip(columns, row)) if columns else dict(row)
    if source == "parquet":
        import pyarrow.parquet as pq

        batch = next(pq.ParquetFile(file).iter_batches(batch_size=1), None)
        rows = batch.to_pylist() if batch is not None else []
        return rows[0] if rows else None
    with file.open(encoding="utf-8-sig") as handle:
        for line in handle:
            if line.strip():
                if line.lstrip().startswith("["):  # one JSON array: read it whole
                    records = json.loads(line + handle.read())
                    return records[0] if records else None
                return json.loads(line)
    return None


def _record_fields(record: Mapping[str, Any], file_source: bool) -> set[str]:
    """The fields a template may use on ``record``: its own, ``subject`` for file records and
    ``answer_letter`` for MMLU-style ones (as mathneuro.data adds them)."""
    fields = set(record)
    if file_source:
        fields.add("subject")
    answer = record.get("answer")
    if isinstance(record.get("choices"), list) and isinstance(answer, int) and not isinstance(answer, bool):
        fields.add("answer_letter")
    return fields


def _used_fields(key: str, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(config key, field) of every record field a spec's template and ``id_field`` use."""
    from mathneuro.data import _template_fields

    used = [(f"{key}.template", name) for name in _template_fields(spec.get("template") or "{text}")]
    if spec.get("template") is None and spec.get("source") == "synthetic":
        used = []
    if spec.get("id_field"):
        used.append((f"{key}.id_field", spec["id_field"]))
    return used


def _template_problems(key: str, spec: Mapping[str, Any], path: str, record: Mapping[str, Any],
                       file_source: bool, place: str = "the first record") -> list[str]:
    fields = _record_fields(record, file_source)
    return [
        f"{where} uses field {name!r}, but {place} of {path} has fields {sorted(fields)}"
        for where, name in _used_fields(key, spec) if name not in fields
    ]


def _line_of(source: str, path: str, index: int, columns) -> str:
    """Where record ``index`` (from 0) of a file is, for a reader: its line (JSON lines, CSV)."""
    import csv

    if source == "json":
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
        if not text.lstrip().startswith("["):
            lines = [n for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
            return f"record {index + 1} (line {lines[index]})"
    if source == "csv":
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            for _ in range(index + (0 if columns else 1) + 1):
                next(reader)
            return f"record {index + 1} (line {reader.line_num})"
    return f"record {index + 1}"


_RECORD_CHECKS = None


def _record_problems(key: str, spec: Mapping[str, Any], source: str, path: str, file_source: bool) -> list[str]:
    """The template's (and ``id_field``'s) fields missing from the first record of file ``path``
    that lacks one, named by its line; a file that cannot be read, named with its reader's
    message. Every record is read once per file content: the verdict is kept by the file's
    digest (mathneuro.freshness), so a dry run re-reads only files that changed."""
    from mathneuro.freshness import StoredCache, digest
    from mathneuro.records import read_records

    global _RECORD_CHECKS
    if _RECORD_CHECKS is None:
        _RECORD_CHECKS = StoredCache("record-checks.json")
    fields = sorted({name for _, name in _used_fields(key, spec)})
    columns = spec.get("columns")

    def verdict() -> list:
        try:
            records = read_records(path, source, columns)
        except ValueError as err:
            return [None, str(err)]
        if not records:
            return [None, f"{path} has no records"]
        for index, record in enumerate(records):
            if not set(fields) <= _record_fields(record, file_source):
                return [index, sorted(_record_fields(record, file_source))]
        return []

    cache_key = f"{digest(path)}|{source}|{columns}|{fields}|{file_source}"
    found = _RECORD_CHECKS.get(cache_key, verdict)
    if not found:
        return []
    index, detail = found
    if index is None:
        return [f"{key}: {detail}"]
    place, has = _line_of(source, path, index, columns), set(detail)
    return [f"{where} uses field {name!r}, but {place} of {path} has fields {detail}"
            for where, name in _used_fields(key, spec) if name not in has]


def _read_first(source: str, path: str, made: Mapping[str, Any], columns=None) -> dict[str, Any] | None:
    """A file's first record; of a file the workflow writes, the record it stands for (the
    workflow writes the same records again, and a file already there may be a placeholder)."""
    if path in made:
        return made[path]
    return first_record(source, path, columns)


def check_data(datasets: Mapping[str, Mapping[str, Any]], local_data: Mapping[str, Mapping[str, Any]],
               made: Mapping[str, Any] | None = None) -> list[str]:
    """What is wrong with the files the data specs and ``local_data`` name.

    ``datasets``: the config's data specs (validated); ``local_data``: the config's entries (an
    ``mmlu_release`` entry names a folder); ``made``: the files the workflow writes itself, each
    mapped to a record like its first (None: written without records), standing in for the file
    until it exists. Every file or glob must exist and be non-empty; each file-source spec's
    template fields (and ``id_field``) must be in its first record, and each ``hf`` spec read
    from local files in the first record of its first local file.
    """
    import os

    from mathneuro.data import config_names, local_entry, split_names

    made = {os.path.normpath(path): record for path, record in (made or {}).items()}
    problems: list[str] = []

    def files_of(key: str, pattern: str) -> list[str]:
        files = [os.path.normpath(f) for f in _files(pattern, made)]
        if not files:
            problems.append(f"{key}: {pattern!r} matches no file")
            return []
        bad = [(f, why) for f in files if (why := _file_problem(f, made))]
        problems.extend(f"{key}: {f} {why}" for f, why in bad)
        return [] if bad else files

    for hub_id, entry in local_data.items():
        if "mmlu_release" in entry:
            files_of(f"local_data.{hub_id}.mmlu_release", str(entry["mmlu_release"]))
            continue
        for split, patterns in (entry.get("files") or {}).items():
            for pattern in [patterns] if isinstance(patterns, str) else patterns:
                pattern = str(pattern)
                key = f"local_data.{hub_id}.files.{split}"
                if "{name}" in pattern:  # a file per config: the configs the data specs read
                    names = [n for spec in datasets.values()
                             if spec.get("source") == "hf" and local_entry({hub_id: entry}, str(spec["path"]))
                             for n in config_names(spec) if n]
                    for name in dict.fromkeys(names):
                        files_of(key, pattern.replace("{name}", name))
                    if not names:
                        files_of(key, pattern.replace("{name}", "*"))
                else:
                    files_of(key, pattern)
    for name, spec in datasets.items():
        key = f"datasets.{name}"
        source = spec.get("source")
        if source in FILE_SOURCES:
            held = (spec.get("heldout") or {}).get("path")
            read = {}
            for where, pattern in [(f"{key}.path", spec["path"])] + ([(f"{key}.heldout.path", held)] if held else []):
                files = read[where] = files_of(where, str(pattern))
                for file in files:
                    if file in made:  # the workflow writes it: the record it stands for
                        record = made[file]
                        problems += ([f"{where}: {file} has no records"] if record is None else
                                     _template_problems(key, spec, file, record, file_source=True))
                    else:
                        problems += _record_problems(key, spec, source, file, file_source=True)
            shared = sorted(set(read.get(f"{key}.path", [])) & set(read.get(f"{key}.heldout.path", [])))
            if shared:
                problems.append(f"{key}.heldout.path matches {shared[0]}, a file its path reads too: the held-out "
                                "texts would be among those the sets are found on")
        elif source == "hf":
            entry = local_entry(local_data, str(spec["path"]))
            if entry is None or "mmlu_release" in entry:
                continue  # the hub's records, or files the workflow converts: not known before a job
            files = entry.get("files") or {}
            split = split_names(spec.get("split") or "train")[0]
            if split not in files:
                problems.append(f"{key}: local_data for {spec['path']} has no files for split {split!r} "
                                f"(it has {sorted(files)})")
                continue
            patterns = files[split] if isinstance(files[split], list) else [files[split]]
            first = [os.path.normpath(f) for f in
                     _files(str(patterns[0]).replace("{name}", config_names(spec)[0] or ""), made)]
            if first and not _file_problem(first[0], made):
                builder = {".csv": "csv", ".parquet": "parquet"}.get(Path(first[0]).suffix, "json")
                if first[0] in made:
                    record = made[first[0]]
                    problems += ([f"{key}: its local file {first[0]} has no records"] if record is None else
                                 _template_problems(key, spec, first[0], record, file_source=False))
                else:
                    problems += _record_problems(key, spec, builder, first[0], file_source=False)
    return list(dict.fromkeys(problems))


def unknown_tasks(suites: Mapping[str, Mapping[str, Any]], known: Callable[[str], bool]) -> list[str]:
    """Messages naming every task a suite lists that ``known`` does not know."""
    return [
        f"evaluation.suites.{suite}.tasks has {task!r}, which lm-eval does not know as a task, group or tag"
        for suite, entry in suites.items() for task in entry["tasks"] if not known(task)
    ]


def cache_folder() -> Path:
    """The project's cache folder: ``$MATHNEURO_CACHE``, or ``mathneuro`` in the user's cache."""
    import os

    root = os.environ.get("MATHNEURO_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mathneuro"
    return Path(root)


def lm_eval_cache_file(cache_dir: str | Path | None = None) -> Path:
    """Where :func:`lm_eval_task_names` keeps the names of the installed lm-eval's tasks."""
    import hashlib
    from importlib.metadata import version
    from importlib.util import find_spec

    where = str(Path(find_spec("lm_eval").origin).resolve().parent)  # without importing lm-eval
    tag = hashlib.sha256(where.encode()).hexdigest()[:12]
    cache = Path(cache_dir) if cache_dir is not None else cache_folder()
    return cache / f"lm_eval_tasks-{version('lm-eval')}-{tag}.json"


def lm_eval_task_names(include_path: str | None = None, cache_dir: str | Path | None = None) -> frozenset[str]:
    """Every task, group and tag name lm-eval knows, with the project's (``mathneuro/lm_tasks``) and
    ``include_path``'s.

    lm-eval's own index of its ~14,000 task YAMLs takes about 7 s to build, so its names are
    cached per lm-eval version and install folder (``cache_dir``, default ``$MATHNEURO_CACHE`` or
    ``~/.cache/mathneuro``; an unwritable cache is skipped). A user's ``include_path`` is indexed
    each time (a small folder); the project's own are read from their YAMLs. A text scan of the YAMLs for ``task:``/``group:``/``tag:`` takes
    0.4 s but is not exact (lm-eval 0.4.13: 151 names it would accept that lm-eval does not
    register, 123 tags it misses), so the cache holds lm-eval's own index.
    """
    import json
    import os

    file = lm_eval_cache_file(cache_dir)
    cache = file.parent
    names: set[str] | None = None
    try:
        names = set(json.loads(file.read_text()))
    except (OSError, ValueError):
        pass
    if names is None:
        from lm_eval.tasks import TaskManager

        names = set(TaskManager().task_index)
        try:
            cache.mkdir(parents=True, exist_ok=True)
            partial = file.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(sorted(names)))
            os.replace(partial, file)
        except OSError:
            pass
    from mathneuro.tasks import project_task_names

    names |= project_task_names()
    if include_path:
        from lm_eval.tasks import TaskManager

        names |= set(TaskManager(include_path=include_path, include_defaults=False).task_index)
    return frozenset(names)


def bpb_datasets(tasks: Iterable[str]) -> list[str]:
    """The data sets of a suite's ``bpb_<data set>`` tasks (mathneuro.evaluate.bpb_task_config)."""
    from mathneuro.evaluate import BPB_PREFIX

    return [t[len(BPB_PREFIX):] for t in tasks if t.startswith(BPB_PREFIX)]


def bpb_problems(suites: Mapping[str, Mapping[str, Any]], datasets: Mapping[str, Mapping[str, Any]],
                 split: str) -> list[str]:
    """Each ``bpb_<data set>`` task must name a data set whose held-out texts (``split``) are not
    the ones its sets are identified on (mathneuro.evaluate.heldout_spec)."""
    from mathneuro.evaluate import heldout_spec

    problems = []
    for label, suite in suites.items():
        for dataset in bpb_datasets(suite["tasks"]):
            key = f"evaluation.suites.{label}: bpb_{dataset}"
            if dataset not in datasets:
                problems.append(f"{key} names no data set; datasets are {sorted(datasets)}")
                continue
            try:
                heldout_spec(datasets[dataset], split)
            except ValueError as err:
                problems.append(f"{key}: datasets.{dataset}: {err}")
    return problems


def gguf_problems(models: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each model spec naming a ``gguf`` file: ``path`` a folder or hub repository, and a file in a
    local folder must exist and hold an architecture transformers reads (mathneuro.gguf.check_gguf).
    A hub file is checked the same way by its dequantize_gguf job, first thing."""
    from mathneuro.gguf import check_gguf, local_file

    problems = []
    for label, spec in models.items():
        if not spec.get("gguf"):
            continue
        key = f"models.{label}"
        if spec["path"] in ("toy", "random"):
            problems.append(f"{key}: `gguf` needs a local folder or a hub repository as `path`, not {spec['path']!r}")
            continue
        file = local_file(spec["path"], spec["gguf"])
        if file is None:
            continue  # a hub repository
        if not file.is_file():
            problems.append(f"{key}: GGUF file {file} does not exist (SmolLM2-135M-Instruct's: "
                            "bash ci/fetch_smollm2.sh; docs/real-models.md)")
            continue
        try:
            check_gguf(file)
        except ValueError as err:
            problems.append(f"{key}: {err}")
    return problems
