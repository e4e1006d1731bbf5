"""Config files that build on others: a file's ``base`` names the files it extends.

``compose`` merges each file over its bases (in order, paths relative to the file), then the
files given in order, then command-line values, the way Snakemake merges several
``--configfile``s: mappings merge key by key, every other value (lists included) is replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    merged: dict[str, Any] = {}
    for base in [bases] if isinstance(bases, str) else bases:
        merge(merged, load(path.parent / base, _chain + (path,)))
    return merge(merged, data)


def compose(paths: Iterable[str | Path], overrides: Mapping | None = None) -> dict[str, Any]:
    """Every file (with its bases) merged in order, then ``overrides`` (``--config`` values)."""
    merged: dict[str, Any] = {}
    for path in paths:
        merge(merged, load(path))
    return merge(merged, dict(overrides or {}))
