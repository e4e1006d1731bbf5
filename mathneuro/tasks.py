"""One folder of lm-eval task YAMLs per evaluation suite: lm-eval's own tasks, data redirected.

``write_suite`` resolves every task a suite names (lm-eval's built-in tasks, a user's
``include_path`` tasks, groups and tags) down to its leaf tasks and writes, for each, a YAML that
``include``s the installed definition unchanged: prompts, few-shot examples, filters and metrics
are lm-eval's. Only where the data comes from may change: a leaf whose ``dataset_path`` has a
``local_data`` entry (``mathneuro.data.local_files``) reads local files in the hub's record format
instead (``dataset_path: json``, ``dataset_kwargs.data_files``). Groups are written the same way
(an ``include`` of their definition), so the folder is a complete registry: evaluation jobs index
it alone (``TaskManager(include_path=folder, include_defaults=False)``), not lm-eval's ~15,000
built-in YAMLs.

The tasks the project defines (EGSM, the toy's) are YAML files in ``mathneuro/lm_tasks/``, which
every suite finds beside lm-eval's own (``task_paths``) and writes like them. The toy's data no hub
holds (``LOCAL_ONLY``): ``local_data`` serves it, as the default config does with the files rule
``synthetic_data`` writes. Only the bits-per-byte tasks (``bpb_*``) are written by
``mathneuro.evaluate``, from the config's data sets.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mathneuro.data import local_entry, local_files

MANIFEST = "suite.json"
PROJECT_TASKS = Path(__file__).parent / "lm_tasks"  # the tasks this project defines (EGSM, the toy's)
# The namespace of the project tasks' data sets that no hub holds (the toy's synthetic tasks): only
# local_data serves them.
LOCAL_ONLY = "mathneuro/"
# Splits a task config may read; every one it names must exist in the local files.
SPLIT_KEYS = ("training_split", "validation_split", "test_split", "fewshot_split")


def task_paths(include_path: str | Path | None = None) -> list[str]:
    """The folders of task YAMLs beside lm-eval's own: the project's, then a user's ``include_path``."""
    return [str(PROJECT_TASKS), *([str(include_path)] if include_path else [])]


@dataclass(frozen=True)
class Definition:
    """A task or group YAML as lm-eval reads it: its config merged over the file it ``include``s
    (``!function`` helpers not imported: None), and every file that makes it (the YAML, those it
    includes, the Python modules its ``!function`` tags name)."""

    config: dict[str, Any]
    files: tuple[str, ...]


def _definition(path: Path) -> Definition:
    """``path``'s definition; an ``include`` and a ``!function`` module are relative to the YAML
    that names them, as lm-eval resolves them (``utils.f`` is ``utils.py`` beside it)."""
    modules = []

    class Loader(yaml.SafeLoader):
        pass

    def function(loader, node):
        modules.append(loader.construct_scalar(node).rsplit(".", 1)[0])

    Loader.add_constructor("!function", function)
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
    helpers = [path.parent / f"{module}.py" for module in modules]
    files = (str(path), *(str(h) for h in helpers if h.is_file()))
    include = config.pop("include", None)
    if not include:
        return Definition(config, files)
    base = _definition(path.parent / include)
    return Definition({**base.config, **config}, files + base.files)


@functools.cache
def folder_definitions(folder: str) -> dict[str, Definition]:
    """Task or group name -> its definition, for every YAML below ``folder``, read without lm-eval
    (whose import and index cost seconds in a dry run). Shared: do not modify."""
    definitions = {}
    for path in sorted(Path(folder).rglob("*.yaml")):
        definition = _definition(path)
        definitions |= {definition.config[key]: definition for key in ("task", "group")
                        if isinstance(definition.config.get(key), str)}
    return definitions


@functools.cache
def project_configs() -> dict[str, dict[str, Any]]:
    """Task or group name -> its config, for every YAML in ``PROJECT_TASKS``. Shared: do not modify."""
    return {name: definition.config for name, definition in folder_definitions(str(PROJECT_TASKS)).items()}


def definition_files(names: Sequence[str], include_path: str | Path | None = None) -> list[str]:
    """The files that define tasks ``names`` among the project's and ``include_path``'s (groups
    through their members, tags through the tasks they tag): what a suite of them is made from,
    besides lm-eval's own tasks (whose definitions come with its version)."""
    definitions = {}
    for folder in task_paths(include_path):
        definitions |= folder_definitions(folder)
    tagged: dict[str, list[str]] = {}
    for name, definition in definitions.items():
        tags = definition.config.get("tag") or []
        for tag in [tags] if isinstance(tags, str) else tags:
            tagged.setdefault(tag, []).append(name)
    files, seen = set(), set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for member in tagged.get(name, []):
            visit(member)
        if name not in definitions:
            return
        config = definitions[name].config
        files.update(definitions[name].files)
        for member in config.get("task", []) if "group" in config else []:
            if isinstance(member, str):
                visit(member)

    for name in names:
        visit(name)
    return sorted(files)


def project_task_names() -> set[str]:
    """The names of the tasks in ``PROJECT_TASKS``; tested equal to lm-eval's index of the folder."""
    return set(project_configs())


def is_local_only(hub_id: Any) -> bool:
    """Whether no hub holds data set ``hub_id`` (``LOCAL_ONLY``): only local_data can serve it."""
    return isinstance(hub_id, str) and hub_id.startswith(LOCAL_ONLY)


def project_data(task: str) -> list[str]:
    """The data sets (``dataset_path``) that project task ``task`` reads, a group's those of its
    members; [] for a task the project does not define."""
    config = project_configs().get(task, {})
    if "group" in config:
        return sorted({hub_id for member in config.get("task", []) if isinstance(member, str)
                       for hub_id in project_data(member)})
    return [config["dataset_path"]] if config.get("dataset_path") else []


def local_only_data(task: str) -> list[str]:
    """The data sets no hub holds that project task (or group) ``task`` reads, else []."""
    return [hub_id for hub_id in project_data(task) if is_local_only(hub_id)]


def unserved_tasks(suites: Mapping[str, Mapping[str, Any]], local_data: Mapping[str, Any]) -> list[str]:
    """Messages naming every task a suite lists whose data only ``local_data`` can serve
    (``local_only_data``) but does not."""
    return [
        f"evaluation.suites.{suite}.tasks has {task!r}, whose data set {hub_id} no hub holds: local_data "
        f"needs an entry {hub_id!r} (the toy's: the files rule synthetic_data writes, as in config.yaml)"
        for suite, entry in suites.items() for task in entry["tasks"]
        for hub_id in local_only_data(task) if local_entry(local_data, hub_id) is None
    ]


def leaf_tasks(manager, names: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(leaves, groups)``: index entries of every task and group that ``names`` reach."""
    leaves: dict[str, Any] = {}
    groups: dict[str, Any] = {}

    def members(cfg: Mapping[str, Any]):
        for member in cfg.get("task", []):
            if isinstance(member, str):
                yield member
            elif "group" in member and member["group"] not in manager.task_index:
                yield from members(member)  # a group defined inline
            else:
                yield member.get("group") or member["task"]

    def visit(name: str) -> None:
        entry = manager.task_index.get(name)
        if entry is None:
            raise ValueError(f"lm-eval knows no task, group or tag {name!r}")
        kind = entry.kind.name
        if kind == "TAG":
            for member in sorted(entry.tags):
                visit(member)
        elif kind == "GROUP":
            groups[name] = entry
            for member in members(entry.cfg):
                visit(member)
        else:
            leaves[name] = entry

    for name in names:
        visit(name)
    return leaves, groups


def _redirect(name: str, cfg: Mapping[str, Any], local_data: Mapping[str, Any]) -> dict[str, Any]:
    """The config keys that point task ``name`` at local files, or {} when its data is not local."""
    hub_id = cfg.get("dataset_path")
    if not hub_id or local_entry(local_data, hub_id) is None:
        if is_local_only(hub_id):
            raise ValueError(f"lm-eval task {name!r} reads {hub_id}, which no hub holds; local_data has no "
                             "entry for it")
        return {}
    splits = sorted({cfg[key] for key in SPLIT_KEYS if cfg.get(key)})
    try:
        builder, files = local_files(local_data, hub_id, cfg.get("dataset_name"), splits)
    except ValueError as err:
        raise ValueError(f"lm-eval task {name!r} reads {hub_id} splits {splits}: {err}") from err
    missing = [f for paths in files.values() for f in paths if not Path(f).is_file()]
    if missing:
        raise FileNotFoundError(f"lm-eval task {name!r}: local copy of {hub_id} not found: {missing[:3]}")
    absolute = {split: [str(Path(f).resolve()) for f in paths] for split, paths in files.items()}
    return {"dataset_path": builder, "dataset_name": None, "dataset_kwargs": {"data_files": absolute}}


def write_suite(
    tasks: Sequence[str],
    out_dir: str | Path,
    *,
    include_path: str | None = None,
    local_data: Mapping[str, Any] | None = None,
    manager=None,
) -> dict[str, Any]:
    """Write the YAMLs of every leaf task and group that ``tasks`` reach into ``out_dir``.

    Returns (and writes as ``suite.json``) a manifest: per leaf task its source YAML and, when
    redirected, the local files it reads. Raises before writing anything when a task is unknown,
    its local data lacks a split the task reads or a file, or it has none for data no hub holds.
    """
    if manager is None:
        from mathneuro.evaluate import task_manager

        manager = task_manager(list(tasks), task_paths(include_path))  # lm-eval's index only if needed
    leaves, groups = leaf_tasks(manager, tasks)
    redirects = {name: _redirect(name, entry.cfg or {}, local_data or {}) for name, entry in leaves.items()}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, entry in {**groups, **leaves}.items():
        if entry.yaml_path is None:
            raise ValueError(f"lm-eval task {name!r} has no YAML definition to include")
        config = {"include": str(Path(entry.yaml_path).resolve()), **redirects.get(name, {})}
        (out_dir / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    from mathneuro.provenance import fingerprint

    manifest = {
        "mathneuro_code": fingerprint(),
        "tasks": list(tasks),
        "groups": sorted(groups),
        "leaves": {name: {"source": str(entry.yaml_path), "data_files": redirects[name].get("dataset_kwargs", {}).get("data_files")}
                   for name, entry in sorted(leaves.items())},
    }
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest
