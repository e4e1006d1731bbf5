"""The sub-skill study (``subskills``): several skills in one study, each one's set made against
the others and the controls, pruned one at a time, and the sets' overlaps with one another.
Off (every list empty) when the config has no such section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mathneuro.methods import METHODS, NO_CONTROL, TOP_K_METHOD, controls as method_controls
from mathneuro.study.klabels import KLabels


class Subskills:
    """The ``subskills`` section (or None); ``k`` and ``edit`` default to ``default_k``
    (consistency.k) and ``default_edit`` (pruning.edit); sets are drawn as the study's main ones
    (``n_samples``, ``seeds``); ``evaluation_suites``: the evaluation's suites."""

    def __init__(self, section: Mapping[str, Any] | None, k: KLabels, *, n_samples: int, seeds: list[int],
                 default_k: str, default_edit: str, evaluation_suites: list[str]):
        self.section, self._k = section, k
        self.n_samples, self.seeds = n_samples, seeds
        self.default_k, self.default_edit, self.evaluation_suites = default_k, default_edit, evaluation_suites

    def __bool__(self) -> bool:
        return bool(self.section)

    @property
    def skills(self) -> list[str]:
        return list(self.section["skills"]) if self else []

    @property
    def method(self) -> str | None:
        return self.section["method"] if self else None

    @property
    def own_suites(self) -> dict[str, Any]:
        """The suites evaluated for the sub-skill sets (and the unedited model) only."""
        return dict(self.section.get("suites", {})) if self else {}

    def datasets(self) -> list[str]:
        """The data sets the sub-skills' sets are made from."""
        return [*self.section["skills"], *self.section["controls"]] if self else []

    def k(self) -> list[str]:
        return (self.section or {}).get("k") or [self.default_k]

    def edit(self) -> str:
        return (self.section or {}).get("edit") or self.default_edit

    def controls(self, skill: str) -> list[str]:
        """What one sub-skill's set is made against: the other sub-skills, then the controls."""
        return [s for s in self.section["skills"] if s != skill] + list(self.section["controls"])

    def variants(self) -> list[tuple]:
        """(skill, method, control, n, seed, k, edit) of every sub-skill set the study prunes."""
        if not self:
            return []
        method = self.method
        return [(skill, method, control, self.n_samples, seed, self._k.of_set(method, k), self.edit())
                for skill in self.skills for control in method_controls(method, self.controls(skill))
                for seed in self.seeds for k in self.k()]

    def suites(self) -> list[str]:
        """The suites evaluated for the sub-skill sets: the chosen evaluation suites and their own."""
        if not self:
            return []
        chosen = self.section.get("evaluate")
        evaluation = list(self.evaluation_suites) if chosen is None else list(chosen)
        return evaluation + list(self.own_suites)

    def overlaps(self) -> list[tuple]:
        """(method, n, seed, k) of each comparison of the sub-skill sets with one another."""
        if not self:
            return []
        return [(self.method, self.n_samples, seed, self._k.of_set(self.method, k))
                for seed in self.seeds for k in self.k()]

    def sets(self) -> dict[str, tuple[str, str]]:
        """Sub-skill -> (method, control label) of the set whose overlaps with the others' the
        study reports: made against the controls alone (against the other sub-skills too, as
        pruned, the sets are disjoint by construction), or its TopK set when there is no control."""
        controls = self.section["controls"]
        pair = (self.method, method_controls(self.method, controls)[0]) if controls else (TOP_K_METHOD, NO_CONTROL)
        return {skill: pair for skill in self.skills}

    def selection(self) -> dict[str, list]:
        """The rows of the evaluations aggregate takes for the sub-skill table (none when off)."""
        return {"skill": self.skills, "method": [self.method], "n_samples": [self.n_samples], "seed": self.seeds,
                "k": self.k(), "edit": [self.edit()]}

    def problems(self, datasets: Mapping[str, Any], k: Mapping[str, float], edits: Mapping[str, float]) -> list[str]:
        """Every data set, K label, edit, method and suite the section names is defined, and its
        own suites are named apart from the evaluation's."""
        if not self:
            return []
        sub, problems = self.section, []
        for key, names in [("subskills.skills", sub["skills"]), ("subskills.controls", sub["controls"])]:
            problems += [f"{key} names data set {d!r}, not among datasets: {sorted(datasets)}"
                         for d in names if d not in datasets]
        problems += [f"subskills.controls has {d!r}, which is one of subskills.skills"
                     for d in sub["controls"] if d in sub["skills"]]
        for key, labels, defined, what in [("subskills.k", self.k(), k, "identification.k"),
                                           ("subskills.edit", [self.edit()], edits, "edits")]:
            problems += [f"{key} names {label!r}, not among {what}: {sorted(defined)}"
                         for label in labels if label not in defined]
        if sub["method"] not in METHODS or METHODS[sub["method"]].top_k_set:
            made = [m for m in METHODS if not METHODS[m].top_k_set]
            problems.append(f"subskills.method {sub['method']!r} is not a method that makes sets: {made}")
        problems += [f"subskills.evaluate names suite {s!r}, not among evaluation.suites: "
                     f"{sorted(self.evaluation_suites)}"
                     for s in sub.get("evaluate") or [] if s not in self.evaluation_suites]
        return problems + [f"subskills.suites.{s} is also an evaluation suite; name it apart"
                           for s in self.own_suites if s in self.evaluation_suites]
