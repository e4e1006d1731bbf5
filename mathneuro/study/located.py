"""A config whose files on the machine are named by their content (mathneuro.freshness.link).

Every path a study reads from outside the workflow — a data set's file or glob and its held-out
file, a local copy of a hub data set (its files, an MMLU release), a local model folder, a GGUF
file — is replaced by the same path inside ``results/content/<digest>/``, a folder of links named
by what the path holds (a user's task folder, ``evaluation.include_path``, by a link of a fixed
name, ``results/content/include_path/``: each suite digests the task files it uses alone). Jobs then read, and Snakemake records, only those names: a byte-identical
copy at another path is the same name (nothing reruns), a changed byte another (its readers
rerun). The workflow's own files (below ``root``, the Snakefile's folder: the shipped toy, the
project's tasks, an example's data) and its outputs (below ``results``) keep their paths. The
checks of a config run on the config as written, so their messages name the user's paths.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from typing import Any

from mathneuro import freshness
from mathneuro.configs import FILE_SOURCES
from mathneuro.study.models import BUILT


INCLUDE_PATH = "include_path"


def located(config: Mapping[str, Any], results: str, root: str | os.PathLike[str]) -> dict[str, Any]:
    """A copy of ``config`` with every path outside ``results`` and ``root`` named by content."""
    out = copy.deepcopy(dict(config))

    def by_content(pattern: str) -> str:
        return freshness.link(pattern, results) if _outside(pattern, results, root) else pattern

    for spec in out["datasets"].values():
        if spec.get("source") in FILE_SOURCES:
            spec["path"] = by_content(spec["path"])
        if isinstance(spec.get("heldout"), dict) and "path" in spec["heldout"]:
            spec["heldout"]["path"] = by_content(spec["heldout"]["path"])
    for entry in out["local_data"].values():
        if "mmlu_release" in entry:
            entry["mmlu_release"] = by_content(entry["mmlu_release"])
        for split, patterns in (entry.get("files") or {}).items():
            entry["files"][split] = _each(patterns, by_content)
    include = out["evaluation"].get("include_path")
    if include and _outside(include, results, root):  # the suites digest the task files they use
        out["evaluation"]["include_path"] = freshness.link(include, results, role=INCLUDE_PATH)
    for spec in out["models"].values():
        if spec["path"] in BUILT or not os.path.isdir(spec["path"]):
            continue  # built by the workflow, or a hub id
        if spec.get("gguf"):  # the file alone, not the folder's other files
            spec["path"] = os.path.dirname(by_content(os.path.join(spec["path"], spec["gguf"])))
        else:
            spec["path"] = by_content(spec["path"])
    return out


def _each(patterns: str | list[str], function: Callable[[str], str]) -> str | list[str]:
    return function(patterns) if isinstance(patterns, str) else [function(p) for p in patterns]


def _outside(pattern: str, results: str, root: str | os.PathLike[str]) -> bool:
    """Whether ``pattern`` names files outside the results folder and the workflow's own folder."""
    where = os.path.abspath(freshness.static_root(pattern))
    return not any(where == os.path.abspath(folder) or where.startswith(os.path.abspath(folder) + os.sep)
                   for folder in (results, root))
