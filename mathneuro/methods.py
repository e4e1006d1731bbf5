"""The methods that choose which parameters to edit, as one table.

Every place that needs to know what a method is (the workflow's rules and paths, the config
checks, the tables and the plots) reads it from ``METHODS``; nothing else lists method names.

* ``per_control``: the set depends on the control data set (MathNeuro is TopK(skill) minus
  TopK(control)); otherwise it is labelled with control ``NO_CONTROL``.
* ``per_k``: one set per K (a fraction of each matrix); otherwise the method sizes its set itself
  (LAPE: ``top_rate`` of the MLP neurons) and is labelled with K ``OWN_SIZE``.
* ``top_k_set``: the set *is* the skill's TopK set (Wanda), so no separate mask is written.
* ``same_count_as``: a baseline with exactly as many entries per matrix as that method's set.
* ``scalable``: scaling by a factor means "this entry times the factor". False for LAPE, whose
  neuron spans three matrices (gate, up, down): scaling them all multiplies its output by
  about factor^3.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_CONTROL = "none"
OWN_SIZE = "auto"


@dataclass(frozen=True)
class Method:
    name: str
    label: str  # how tables and figures name it
    per_control: bool
    per_k: bool
    top_k_set: bool = False
    same_count_as: str | None = None
    scalable: bool = True


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("mathneuro", "MathNeuro", per_control=True, per_k=True),
        Method("wanda", "Wanda (TopK of the skill)", per_control=False, per_k=True, top_k_set=True),
        Method("random", "random, same count", per_control=True, per_k=True, same_count_as="mathneuro"),
        Method("lape", "LAPE", per_control=True, per_k=False, scalable=False),
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


def k_labels(name: str, labels: list[str]) -> list[str]:
    """The K labels a method's sets carry: the given K labels, or ``OWN_SIZE``."""
    return list(labels) if method(name).per_k else [OWN_SIZE]
