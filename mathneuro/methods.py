"""The methods that choose which parameters to edit, as one table.

Every place that needs to know what a method is (the workflow's rules and paths, the config
checks, the tables and the plots) reads it from ``METHODS``; nothing else lists method names.

* ``per_control``: the set depends on the control data set (MathNeuro is TopK(skill) minus
  TopK(control)); otherwise it is labelled with control ``NO_CONTROL``.
* ``top_k_set``: the set *is* the skill's TopK set (Wanda), so no separate mask is written.
* ``same_count_as``: a baseline with exactly as many entries per matrix as that method's set.

Every method makes one set per K: a fraction of each matrix, or for LAPE the fraction of MLP
neurons it keeps (its ``top_rate``), so every method draws a curve across K.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_CONTROL = "none"


@dataclass(frozen=True)
class Method:
    name: str
    label: str  # how tables and figures name it
    per_control: bool
    top_k_set: bool = False
    same_count_as: str | None = None


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("mathneuro", "MathNeuro", per_control=True),
        Method("wanda", "Wanda (TopK of the skill)", per_control=False, top_k_set=True),
        Method("random", "random, same count", per_control=True, same_count_as="mathneuro"),
        Method("lape", "LAPE", per_control=True),
    )
}


def method(name: str) -> Method:
    """The method called ``name``; ValueError listing the known ones otherwise."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {sorted(METHODS)}")
    return METHODS[name]


def controls(name: str, control_sets: list[str]) -> list[str]:
    """The control labels a method's sets carry: every control data set, or ``NO_CONTROL``."""
    return list(control_sets) if method(name).per_control else [NO_CONTROL]
