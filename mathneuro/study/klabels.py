"""K labels: the fraction of each matrix a set keeps, named by a label that names files.

A study's K labels are ``identification.k`` (label -> p, the skill's fraction). The controls'
TopK sets may be taken at another fraction q (``identification.control_k``); a set made against
control TopK sets at q != p, and its same-count baselines, carry a composite label
``<label>-c<q>pct``, which their TopK jobs read too. Where q = p every label is the plain one, so
finished files keep their names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mathneuro.methods import METHODS, TOP_K


class KLabels:
    """The K labels of ``identification``, plain and composite, and how sets are labelled."""

    def __init__(self, identification: Mapping[str, Any]):
        # label -> fraction p, smallest first
        self.fractions = dict(sorted(identification["k"].items(), key=lambda item: item[1]))
        setting = identification.get("control_k") or {}
        self.control = {k: self._control_fraction(setting, k, p) for k, p in self.fractions.items()}  # label -> q
        # composite label -> the skill's plain label, for every K whose controls' fraction differs
        self.composite = {f"{k}-c{100 * q:g}pct": k for k, q in self.control.items() if q != self.fractions[k]}
        self._composite_of = {k: label for label, k in self.composite.items()}
        self._named = list(setting.get("fractions", {}))  # the labels control_k.fractions names

    @staticmethod
    def _control_fraction(setting: Mapping[str, Any], k: str, p: float) -> float:
        """The controls' fraction q at skill K label ``k`` (a ratio of p, capped at 1, or a fraction
        per label, p where none is given)."""
        if "ratio" in setting:
            return min(1.0, setting["ratio"] * p)
        return setting.get("fractions", {}).get(k, p)

    def of_set(self, method: str, k: str) -> str:
        """The K label of ``method``'s set at skill K label ``k``: composite when the method reads
        controls' TopK sets (or pairs with one that does) and their K differs."""
        m = METHODS[method]
        if m.reads == "set":
            return self.of_set(m.same_count_as, k)
        uses_control_k = m.reads == "top_k" and m.controls != "none"
        return self._composite_of.get(k, k) if uses_control_k else k

    def skill(self, label: str) -> str:
        """The skill's K label of a set or TopK label (the plain label itself, or a composite's)."""
        return self.composite.get(label, label)

    def fraction(self, label: str) -> float:
        """The fraction a TopK job at K label ``label`` keeps: a composite label's is q."""
        return self.control[self.composite[label]] if label in self.composite else self.fractions[label]

    def control_label(self, label: str) -> dict[str, float]:
        """``{"control_k_fraction": q}`` for a composite K label, else nothing."""
        return {"control_k_fraction": self.fraction(label)} if label in self.composite else {}

    def labels(self, label: str) -> dict[str, Any]:
        """How tables label a set at K label ``label``: the skill's K and fraction, and the
        controls' fraction where it differs (finished sets with q = p keep their labels)."""
        k = self.skill(label)
        return {"k": k, "k_fraction": self.fractions[k]} | self.control_label(label)

    def set_labels(self, model: str, method: str | None, control: str, n: int, seed: int, k: str) -> dict[str, Any]:
        """How a set's counts and evaluations are labelled. A data set's own TopK set (``method``
        None) by its data set alone (method TOP_K, control = the data set), as every study reads
        it; aggregate names the skill's after the TopK-set method."""
        labels = {"model": model, "method": method or TOP_K, "control": control, "n_samples": int(n), "seed": int(seed)}
        if method is None:
            return labels | {"k": k, "k_fraction": self.fraction(k)}
        return labels | self.labels(k)

    def problems(self) -> list[str]:
        """Control fractions named for unknown K labels, and plain labels that take a composite's name."""
        problems = [f"identification.control_k.fractions names K {k!r}, not among identification.k: "
                    f"{sorted(self.fractions)}" for k in self._named if k not in self.fractions]
        return problems + [f"identification.k label {label!r} is the name of a set whose controls' K differs; "
                           "rename it" for label in self.composite if label in self.fractions]
