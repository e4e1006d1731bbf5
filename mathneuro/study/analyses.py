"""The paper's edit analyses (pruning across K, scaling, data efficiency): which variants each
evaluates, and the sets the study's layer and share tables count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mathneuro.analyses import NO_SET
from mathneuro.methods import METHODS, controls as method_controls
from mathneuro.study.klabels import KLabels

EDIT_ANALYSES = ("pruning", "scaling", "data_efficiency", "finetuning")


def trains_per_set(spec: Mapping[str, Any]) -> bool:
    """Whether a fine-tuning edit's run (its ``finetune`` entry) depends on a set: it trains the
    set's entries, or starts from an edit of it. Training every parameter from the unedited model
    does not: it is one run per repeat, evaluated once (its rows labelled ``analyses.NO_SET``)."""
    return spec["train"] == "set" or spec["start"] is not None


class Analyses:
    """The sections ``pruning``, ``scaling``, ``data_efficiency`` and ``consistency`` of ``config``,
    over the sets drawn for ``controls`` (``n_samples`` texts under each of ``seeds``)."""

    def __init__(self, config: Mapping[str, Any], k: KLabels, *, controls: list[str], n_samples: int,
                 seeds: list[int]):
        self.config, self._k = config, k
        self.controls, self.n_samples, self.seeds = controls, n_samples, seeds
        self.consistency = config["consistency"]
        efficiency = config["data_efficiency"]
        self.data_efficiency_k = efficiency["k"] or [self.consistency["k"]]
        self.data_efficiency_methods = efficiency["methods"] or config["pruning"]["methods"]
        tuning = config["finetuning"]
        self.finetuning_k = tuning["k"] or [self.consistency["k"]]
        self.finetuning_methods = tuning["methods"] or config["pruning"]["methods"]

    def axes(self, analysis: str) -> dict[str, list]:
        """What an edit analysis ('pruning', 'scaling', 'data_efficiency') evaluates, as the values
        of each column of the evaluations: aggregate selects the analysis's rows with it, and its
        variants are these values crossed, with every control of each method."""
        section = self.config[analysis]
        if analysis == "data_efficiency":
            return {"method": self.data_efficiency_methods, "n_samples": self.consistency["n_samples"],
                    "seed": self.consistency["seeds"], "k": self.data_efficiency_k, "edit": section["edits"]}
        if analysis == "finetuning":
            return {"method": self.finetuning_methods, "n_samples": [self.n_samples], "seed": self.seeds,
                    "k": self.finetuning_k, "edit": section["edits"]}
        return {"method": section["methods"], "n_samples": [self.n_samples], "seed": self.seeds, "k": section["k"],
                "edit": [section["edit"]] if analysis == "pruning" else section["edits"]}

    def variants(self, analysis: str) -> list[tuple]:
        """(method, control, n, seed, k, edit) of every evaluated variant of an analysis that edits
        a set (k: the set's K label, composite where the controls' K differs); the fine-tuning runs
        that need no set are :meth:`unedited_runs`."""
        axes = self.axes(analysis)
        edits = [e for e in axes["edit"] if analysis != "finetuning" or trains_per_set(self.config["finetune"][e])]
        return [(method, control, n, seed, self._k.of_set(method, k), edit)
                for method in axes["method"] for control in method_controls(method, self.controls)
                for n in axes["n_samples"] for seed in axes["seed"] for k in axes["k"] for edit in edits]

    def unedited_runs(self) -> list[tuple[int, str]]:
        """(seed, edit) of every fine-tuning run of the analysis that trains every parameter of the
        unedited model: one run and one evaluation per repeat, whatever the sets."""
        return [(seed, edit) for edit in self.config["finetuning"]["edits"] for seed in self.seeds
                if edit in self.config["finetune"] and not trains_per_set(self.config["finetune"][edit])]

    def evaluated_variants(self) -> list[tuple]:
        """Every variant some edit analysis evaluates, once, in the analyses' order."""
        return list(dict.fromkeys(v for analysis in EDIT_ANALYSES for v in self.variants(analysis)))

    def study_k(self) -> list[str]:
        """The K labels the pruning, scaling and consistency analyses use, smallest first."""
        used = set(self.config["pruning"]["k"]) | set(self.config["scaling"]["k"]) | {self.consistency["k"]}
        return [k for k in self._k.fractions if k in used]

    def sets(self) -> list[tuple]:
        """(method, control, seed, k) of every set of the study's main draws (layer, share tables)."""
        return [(method, control, seed, self._k.of_set(method, k)) for method in self.config["methods"]
                for control in method_controls(method, self.controls) for seed in self.seeds for k in self.study_k()]

    def agreements(self) -> list[tuple]:
        """(method_a, method_b, control, seed, k) of every comparison of two methods' sets from the
        same draw: the skill-specific set against each set ranked by another importance (SNIP's),
        at the study's K labels (each its own set's K label)."""
        from mathneuro.methods import SPECIFIC

        methods = self.config["methods"]
        others = [m for m in methods if METHODS[m].importance != METHODS[SPECIFIC].importance
                  and METHODS[m].reads == "top_k" and not METHODS[m].top_k_set]
        if SPECIFIC not in methods:
            return []
        return [(SPECIFIC, other, control, seed, k) for other in others
                for control in method_controls(other, self.controls) if control in method_controls(SPECIFIC, self.controls)
                for seed in self.seeds for k in self.study_k()]

    def selections(self, skill: str) -> dict[str, dict[str, list]]:
        """Each analysis's rows of the evaluations of ``skill``'s sets, as aggregate selects them."""
        out = {a: {"skill": [skill], **self.axes(a)} for a in EDIT_ANALYSES}
        if self.unedited_runs():  # their rows: no set, no K, no draw
            tuning = out["finetuning"]
            tuning |= {"method": [*tuning["method"], NO_SET], "k": [*tuning["k"], NO_SET],
                       "n_samples": [*tuning["n_samples"], 0]}
        return out

    def problems(self, edits: Mapping[str, float]) -> list[str]:
        """Every K label, edit and method the analyses name is defined where it must be."""
        config, k, problems = self.config, self._k.fractions, []
        for key, labels, defined, what in [
            ("pruning.k", config["pruning"]["k"], k, "identification.k"),
            ("scaling.k", config["scaling"]["k"], k, "identification.k"),
            ("consistency.k", [self.consistency["k"]], k, "identification.k"),
            ("data_efficiency.k", self.data_efficiency_k, k, "identification.k"),
            ("pruning.edit", [config["pruning"]["edit"]], edits, "edits"),
            ("scaling.edits", config["scaling"]["edits"], edits, "edits"),
            ("data_efficiency.edits", config["data_efficiency"]["edits"], edits, "edits"),
            ("finetuning.k", self.finetuning_k, k, "identification.k"),
            ("finetuning.edits", config["finetuning"]["edits"], config["finetune"], "finetune"),
            *[(f"finetune.{label}.start", [spec["start"]] if spec["start"] else [], edits, "edits")
              for label, spec in config["finetune"].items()],
            ("methods", config["methods"], METHODS, "the methods"),
        ]:
            problems += [f"{key} names {label!r}, not among {what}: {sorted(defined)}"
                         for label in labels if label not in defined]
        for key, names in [
            ("pruning.methods", config["pruning"]["methods"]),
            ("scaling.methods", config["scaling"]["methods"]),
            ("data_efficiency.methods", self.data_efficiency_methods),
            ("finetuning.methods", self.finetuning_methods),
        ]:
            problems += [f"{key} has {name!r}, which is not in methods: {config['methods']}"
                         for name in names if name not in config["methods"]]
        problems += [f"finetune.{label} is also an edit's label: name it apart" for label in config["finetune"]
                     if label in edits]
        datasets = config["datasets"]
        return problems + [f"finetune.{label}.data names {spec['data']!r}, not among datasets: {sorted(datasets)}"
                           for label, spec in config["finetune"].items() if spec["data"] not in datasets]
