"""What every part of a study shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def canonical(value: Any) -> Any:
    """Dicts with sorted keys, recursively: reordering the config must not rerun jobs."""
    if isinstance(value, Mapping):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value
