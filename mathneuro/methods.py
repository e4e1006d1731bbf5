"""The methods that choose which parameters to edit, as one table.

Every place that needs to know what a method is (the workflow's rules and paths, the config
checks, the tables and the plots) reads it from ``METHODS``; nothing else lists method names.

* ``controls``: which control data sets a set is made against, which its ``control`` label
  names: ``"each"``, one set per control (MathNeuro: TopK(skill) - TopK(control)); ``"all"``, one
  set against every control at once, labelled by the controls joined with ``+`` in sorted order
  (``mmlu+race``; a new control is a new label, so finished sets never change); ``"none"``, no
  control (``NO_CONTROL``).
* ``top_k_set``: the set *is* the skill's TopK set (Wanda), so no separate mask is written.
* ``same_count_as``: a baseline with exactly as many entries per matrix as that method's set.

Every method makes one set per K: a fraction of each matrix, or for LAPE the fraction of MLP
neurons it keeps (its ``top_rate``), so every method draws a curve across K.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_CONTROL = "none"
JOIN = "+"  # joins the controls of an "all" set's label; data set labels never hold it


@dataclass(frozen=True)
class Method:
    name: str
    label: str  # how tables and figures name it
    controls: str  # "each" | "all" | "none"
    top_k_set: bool = False
    same_count_as: str | None = None


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("mathneuro", "MathNeuro", controls="each"),
        Method("wanda", "Wanda (TopK of the skill)", controls="none", top_k_set=True),
        Method("random", "random, same count", controls="each", same_count_as="mathneuro"),
        Method("lape", "LAPE", controls="all"),
        Method("mathneuro_all", "MathNeuro (union)", controls="all"),
    )
}


def method(name: str) -> Method:
    """The method called ``name``; ValueError listing the known ones otherwise."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {sorted(METHODS)}")
    return METHODS[name]


def controls(name: str, control_sets: list[str]) -> list[str]:
    """The control labels a method's sets carry (see ``Method.controls``)."""
    mode = method(name).controls
    if mode == "each":
        return list(control_sets)
    return [JOIN.join(sorted(control_sets))] if mode == "all" else [NO_CONTROL]


def control_sets(label: str) -> list[str]:
    """The control data sets behind a control label (``mmlu+race`` -> ``["mmlu", "race"]``)."""
    return label.split(JOIN)
