"""A study's config and what follows from it, for the workflow's rules and for tests alike.

``Study(config)`` takes a composed config that the schema has validated (and filled with its
defaults). It is the rules' one facade, made of parts with one concern each:

- ``study.k`` (:class:`KLabels`): the K labels, composite where the controls' K differs, and how
  sets are labelled;
- ``study.models`` (:class:`Models`): what a job loads, and the memory and time it asks for;
- ``study.data`` (:class:`Data`): which files each data set and each local copy of a hub data set
  reads, and the synthetic files the workflow writes;
- ``study.suites`` (:class:`Suites`): the evaluation suites, their tasks, and what each suite's
  task folder is made from;
- ``study.analyses`` (:class:`Analyses`): the edit analyses' variants and the study's sets;
- ``study.subskills`` (:class:`Subskills`): the sub-skill study, false when the config has none.

:meth:`Study.problems` and :meth:`Study.input_problems` gather the parts' checks of what the
schema cannot express, made before any job. The rules keep only wildcard constraints, paths and
input functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mathneuro.methods import METHODS
from mathneuro.study.analyses import EDIT_ANALYSES, Analyses, trains_per_set
from mathneuro.study.common import canonical
from mathneuro.study.data import Data
from mathneuro.study.klabels import KLabels
from mathneuro.study.models import Models
from mathneuro.study.subskills import Subskills
from mathneuro.study.suites import Suites


def shipped_toy_folder(config: Mapping[str, Any]) -> str | None:
    """The shipped toy's folder (relative to the working directory when below it) when ``config``'s
    toy recipe made it and a model of the config is a toy, else None (mathneuro.shipped_toy)."""
    import os

    from mathneuro import shipped_toy as shipped

    if "synthetic" not in config or not any(m["path"] == "toy" for m in config["models"].values()):
        return None
    if not shipped.matches(config):
        return None
    folder = os.path.relpath(shipped.SHIPPED)
    return str(shipped.SHIPPED) if folder.startswith("..") else folder


__all__ = ["EDIT_ANALYSES", "Analyses", "Data", "KLabels", "Models", "Study", "Subskills", "Suites", "canonical", "shipped_toy_folder"]


class Study:
    """The config of one study, and what the workflow derives from it."""

    def __init__(self, config: Mapping[str, Any], results: str = "results"):
        self.config, self.results = config, results
        ident = config["identification"]
        self.name = config["study"]
        self.skill, self.controls = ident["skill"], list(ident["controls"])
        self.datasets = [self.skill, *self.controls]
        self.n_samples, self.seeds = ident["n_samples"], list(ident["seeds"])
        self.edits = config["edits"]  # label -> weight factor
        self.consistency = config["consistency"]
        # which matrices are scored (every job that scores, collects or masks reads the same)
        self.targets = {key: ident[key] for key in ("include", "exclude", "untied_lm_head")}
        self.k = KLabels(ident)
        self.models = Models(config["models"], offline=config["offline"], results=results, shipped_toy=shipped_toy_folder(config))
        self.data = Data(config, results)
        self.analyses = Analyses(config, self.k, controls=self.controls, n_samples=self.n_samples, seeds=self.seeds)
        self.subskills = Subskills(config.get("subskills"), self.k, n_samples=self.n_samples, seeds=self.seeds,
                                   default_k=self.consistency["k"], default_edit=config["pruning"]["edit"],
                                   evaluation_suites=list(config["evaluation"]["suites"]))
        self.suites = Suites(config["evaluation"], self.data, self.skill, extra=self.subskills.own_suites)

    def problems(self) -> list[str]:
        """What the schema cannot check: every label a section names is defined where it must be."""
        datasets, problems = self.config["datasets"], []
        for key, name in [("identification.skill", self.skill)] + [
            ("identification.controls", c) for c in self.controls
        ]:
            if name not in datasets:
                problems.append(f"{key} names data set {name!r}, not among datasets: {sorted(datasets)}")
        if self.skill in self.controls:
            problems.append(f"identification.controls must not contain the skill data set {self.skill!r}")
        problems += self.analyses.problems(self.edits) + self.k.problems() + self.data.problems()
        problems += self.models.problems(synthetic="synthetic" in self.config, datasets=datasets)
        problems += self.subskills.problems(datasets, self.k.fractions, self.edits)
        return problems + self.suites.problems(self.config["local_data"])

    def input_problems(self, known_task=None, hub_cache: bool = True) -> list[str]:
        """What the config names outside itself (mathneuro.configs): the used data sets' files
        (or those rule synthetic_data writes) and every record's template fields, the models'
        folders and GGUF files, the task folder, bits-per-byte data sets and, by ``known_task``
        (default: Suites.known_task), the suites' tasks; with ``hub_cache``, offline, whether the
        hub cache holds the hub models and data sets (mathneuro.hub)."""
        from mathneuro.configs import check_data, gguf_problems

        used = {name: self.config["datasets"][name] for name in self.all_datasets()}  # unused specs read nothing
        problems = check_data(used, self.config["local_data"], self.data.synthetic_files())
        problems += gguf_problems(self.config["models"]) + self.models.location_problems()
        if hub_cache:
            problems += [p for p in map(self.models.cache_problem, self.models) if p]
            problems += [p for d in self.all_datasets() if (p := self.data.cache_problem(d, self.config["offline"]))]
        return problems + self.suites.input_problems(known_task)

    def external(self, paths) -> list[str]:
        """Those of ``paths`` outside the study's results folder: what the study reads from the
        machine (data, local model folders, GGUF files, task YAMLs), compared by content
        (mathneuro.freshness); the workflow's own files are compared by time."""
        import os

        results = os.path.normpath(self.results)
        return [str(p) for p in paths
                if os.path.normpath(str(p)) != results and not os.path.normpath(str(p)).startswith(results + os.sep)]

    def all_datasets(self) -> list[str]:
        """The data sets some set is made from (the skill's and controls', the sub-skills'), and
        those the fine-tuning edits in use train on."""
        tuned = [self.config["finetune"][e]["data"] for e in self.config["finetuning"]["edits"]
                 if e in self.config["finetune"]]
        return list(dict.fromkeys([*self.datasets, *self.subskills.datasets(), *tuned]))

    def finetune_spec(self, edit: str) -> dict[str, Any]:
        """A fine-tuning edit's settings as its jobs read them (param: a change reruns them)."""
        return canonical(self.config["finetune"][edit])

    def trains_per_set(self, edit: str) -> bool:
        """Whether a fine-tuning edit's run depends on a set (it trains the set's entries, or
        starts from an edit of it); training every parameter from the unedited model does not."""
        return trains_per_set(self.config["finetune"][edit])

    def finetune_edits(self, *, per_set: bool) -> list[str]:
        """The fine-tuning edits whose runs depend on a set (``per_set``), or those that do not."""
        return [edit for edit in self.config["finetune"] if self.trains_per_set(edit) == per_set]

    def training_texts(self, edit: str, seed: int) -> dict[str, Any]:
        """The data spec a fine-tuning run of repeat ``seed`` reads: its data set's texts, as many
        as its steps use (steps x batch size), drawn under the edit's seed plus the repeat's."""
        spec = self.config["finetune"][edit]
        return self.data.spec(spec["data"], spec["steps"] * spec["batch_size"], spec["seed"] + int(seed))

    def plant_base(self, model: str) -> str:
        """The name of the toy a planted model's skill is planted in: ``toy-`` and the digest of
        its recipe (the config's toy recipe, ``plant.base`` replacing keys of ``toy_model``), so
        that planted models with one base share it, and a changed recipe is another base."""
        from mathneuro.shipped_toy import recipe_digest

        return f"toy-{recipe_digest(self._base_config(model))[:12]}"

    def plant_bases(self) -> dict[str, dict[str, Any]]:
        """Every planted model's base: name -> the toy_model keys it is trained with."""
        return {self.plant_base(m): canonical(self._base_config(m)["toy_model"]) for m in self.models.built_as("planted")}

    def _base_config(self, model: str) -> dict[str, Any]:
        base = dict(self.config.get("toy_model", {})) | dict(self.models[model]["plant"]["base"])
        return {**self.config, "toy_model": base}

    def planted_variants(self, model: str) -> list[tuple]:
        """(method, control, n, seed, k, edit) of a planted model's own sets pruned (the pruning
        edit): the set S its skill was planted in, once, and a random set of S's count in every
        matrix per repeat (mathneuro.analyses.PLANTED, PLANTED_RANDOM); none for other models."""
        from mathneuro.analyses import PLANTED, PLANTED_RANDOM
        from mathneuro.methods import NO_CONTROL

        if model not in self.models.built_as("planted"):
            return []
        edit = self.config["pruning"]["edit"]
        seeds = [(PLANTED, self.seeds[0])] + [(PLANTED_RANDOM, seed) for seed in self.seeds]
        return [(method, NO_CONTROL, self.n_samples, seed, PLANTED, edit) for method, seed in seeds]

    def k_labels(self, model: str, k: str) -> dict[str, Any]:
        """How an evaluation's rows label its set's K (KLabels.labels); a planted model's own sets
        (K label PLANTED) by the share of the planted set."""
        from mathneuro.analyses import PLANTED

        if k == PLANTED:
            return {"k": PLANTED, "k_fraction": float(self.models[model]["plant"]["share"])}
        return self.k.labels(k)

    def planting_data(self, model: str) -> list[str]:
        """The data sets a planted model is trained on: the planted skill's, then those rehearsed."""
        plant = self.models[model]["plant"]
        return list(dict.fromkeys([plant["data"], *plant["rehearse"]]))

    def planting_texts(self, model: str) -> dict[str, Any]:
        """The data specs a planted model is trained from (:meth:`planting_data`, in that order):
        every text each reads (training draws its batches from them under the planting's seed)."""
        return {name: canonical(self.config["datasets"][name]) for name in self.planting_data(model)}

    def skill_label(self, skill: str) -> dict[str, str]:
        """An evaluation's ``skill`` label where its set is another skill's than the study's (a
        sub-skill's); the tables fill in the study's skill elsewhere, so finished evaluations keep
        their labels."""
        return {} if skill == self.skill else {"skill": skill}

    def set_params(self, method: str, model: str) -> dict[str, Any]:
        """What a method reads besides its input files: the model and targets (methods that read
        statistics) and its own config section; plain values, nothing else."""
        m = METHODS[method]
        if m.reads != "statistics":
            return {}
        return {"model": self.models.params(model), "targets": self.targets,
                "settings": canonical(self.config[m.settings]) if m.settings else {}}

    def aggregate_params(self) -> dict[str, Any]:
        """What aggregate needs besides its inputs: each analysis's rows, the skill's tasks, and
        whose name the skill's TopK set takes."""
        from mathneuro.methods import TOP_K_METHOD

        from mathneuro.analyses import PLANTED, PLANTED_RANDOM

        selections = self.analyses.selections(self.skill) | {"subskills": self.subskills.selection()}
        if any(self.planted_variants(m) for m in self.models):  # the planted sets' rows join pruning's
            pruning = selections["pruning"]
            pruning |= {"method": [*pruning["method"], PLANTED, PLANTED_RANDOM], "k": [*pruning["k"], PLANTED]}
        return {"selections": selections, "skill_tasks": self.suites.skill_tasks, "skill": self.skill,
                "top_k_set": {"skill": self.skill, "method": TOP_K_METHOD}}

    def prefetch(self) -> dict[str, Any]:
        """What a login node with internet fetches for offline compute nodes: the hub models,
        data sets and lm-eval tasks the study reads (none the workflow builds or reads locally)."""
        return {"models": self.models.hub(), "datasets": self.data.hub(self.all_datasets()),
                "tasks": self.suites.hub_tasks(), "include_path": self.config["evaluation"]["include_path"]}
