"""A study's config and what follows from it, for the workflow's rules and for tests alike.

``Study(config)`` takes a composed config that the schema has validated (and filled with its
defaults) and answers what the rules ask: the cross-references the schema cannot express
(:meth:`Study.problems`, :meth:`Study.input_problems`), the edit analyses' axes and variants, the
K labels in use, and which files each data set or local copy of a hub data set reads. The rules
keep only wildcard constraints, paths and input functions.
"""

from __future__ import annotations

import glob
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mathneuro.methods import METHODS, NO_CONTROL, TOP_K, TOP_K_METHOD, controls as method_controls

EDIT_ANALYSES = ("pruning", "scaling", "data_efficiency")
RELEASE_SPLITS = ("dev", "validation", "test")  # the hub splits an MMLU release is converted to


def canonical(value: Any) -> Any:
    """Dicts with sorted keys, recursively: reordering the config must not rerun jobs."""
    if isinstance(value, Mapping):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


def existing_or_globbed(pattern: str) -> list[str]:
    """A file name as it is (a missing one is reported by Snakemake), or a glob's sorted matches."""
    return sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]


class Study:
    """The config of one study, and what the workflow derives from it."""

    def __init__(self, config: Mapping[str, Any], results: str = "results"):
        self.config, self.results = config, results
        ident = config["identification"]
        self.name = config["study"]
        self.skill, self.controls = ident["skill"], list(ident["controls"])
        self.datasets = [self.skill, *self.controls]
        self.n_samples, self.seeds = ident["n_samples"], list(ident["seeds"])
        self.k = dict(sorted(ident["k"].items(), key=lambda item: item[1]))  # label -> fraction, smallest first
        self.control_k = {k: self._control_fraction(k, p) for k, p in self.k.items()}  # label -> q
        # a set whose control TopK sets are at q != p is labelled k<label>-c<q>pct; so are those TopK sets
        self.composite_k = {f"{k}-c{100 * q:g}pct": k for k, q in self.control_k.items() if q != self.k[k]}
        self._composite_of = {k: label for label, k in self.composite_k.items()}  # skill K label -> composite
        self.edits = config["edits"]  # label -> weight factor
        self.consistency = config["consistency"]
        efficiency = config["data_efficiency"]
        self.data_efficiency_k = efficiency["k"] or [self.consistency["k"]]
        self.data_efficiency_methods = efficiency["methods"] or config["pruning"]["methods"]
        self.subskills = config.get("subskills")
        # every suite: the evaluation's, and those the sub-skill study evaluates alone
        self.suites = {**config["evaluation"]["suites"], **(self.subskills or {}).get("suites", {})}
        suites = config["evaluation"]["suites"]
        self.skill_tasks = config["evaluation"]["skill_tasks"] or [
            t for suite in suites.values() for t in suite["tasks"] if self.skill in t
        ]
        self.releases = {hub: e["mmlu_release"] for hub, e in config["local_data"].items() if "mmlu_release" in e}
        self.local_data = {hub: canonical(self._local_entry(hub, e)) for hub, e in config["local_data"].items()}
        self._lm_eval_tasks: frozenset[str] | None = None

    def _control_fraction(self, k: str, p: float) -> float:
        """The controls' K for skill K label ``k`` (identification.control_k)."""
        setting = self.config["identification"].get("control_k") or {}
        if "ratio" in setting:
            return min(1.0, setting["ratio"] * p)
        return setting.get("fractions", {}).get(k, p)

    # K labels: a set's ``k`` is the skill's K label, or a composite one when its controls' TopK
    # sets are at another K (identification.control_k); TopK jobs read both kinds.

    def set_k(self, method: str, k: str) -> str:
        """The K label of ``method``'s set at skill K label ``k``: composite when the method reads
        controls' TopK sets (or pairs with one that does) and their K differs."""
        m = METHODS[method]
        if m.reads == "set":
            return self.set_k(m.same_count_as, k)
        uses_control_k = m.reads == "top_k" and m.controls != "none"
        return self._composite_of.get(k, k) if uses_control_k else k

    def skill_k(self, label: str) -> str:
        """The skill's K label of a set or TopK K label (the plain label itself, or a composite's)."""
        return self.composite_k.get(label, label)

    def top_k_fraction(self, label: str) -> float:
        """The fraction a TopK job at K label ``label`` keeps: a composite label's is q."""
        return self.control_k[self.composite_k[label]] if label in self.composite_k else self.k[label]

    def k_labels(self, label: str) -> dict[str, Any]:
        """How tables label a set at K label ``label``: the skill's K and fraction, and the
        controls' fraction where it differs (finished sets with q = p keep their labels)."""
        k = self.skill_k(label)
        return {"k": k, "k_fraction": self.k[k]} | self.control_k_label(label)

    def control_k_label(self, label: str) -> dict[str, float]:
        """``{"control_k_fraction": q}`` for a composite K label, else nothing."""
        return {"control_k_fraction": self.top_k_fraction(label)} if label in self.composite_k else {}

    def set_labels(self, model: str, method: str | None, control: str, n: int, seed: int, k: str) -> dict[str, Any]:
        """How a set's counts and evaluations are labelled. A data set's own TopK set (``method``
        None) by its data set alone (method TOP_K, control = the data set), as every study reads
        it; aggregate names the skill's after the TopK-set method."""
        labels = {"model": model, "method": method or TOP_K, "control": control, "n_samples": int(n), "seed": int(seed)}
        if method is None:
            return labels | {"k": k, "k_fraction": self.top_k_fraction(k)}
        return labels | self.k_labels(k)

    # Cross-references ----------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """What the schema cannot check: every label a section names is defined where it must be."""
        config, datasets, problems = self.config, self.config["datasets"], []
        for key, name in [("identification.skill", self.skill)] + [
            ("identification.controls", c) for c in self.controls
        ]:
            if name not in datasets:
                problems.append(f"{key} names data set {name!r}, not among datasets: {sorted(datasets)}")
        if self.skill in self.controls:
            problems.append(f"identification.controls must not contain the skill data set {self.skill!r}")
        for key, labels, defined, what in [
            ("pruning.k", config["pruning"]["k"], self.k, "identification.k"),
            ("scaling.k", config["scaling"]["k"], self.k, "identification.k"),
            ("consistency.k", [self.consistency["k"]], self.k, "identification.k"),
            ("data_efficiency.k", self.data_efficiency_k, self.k, "identification.k"),
            ("pruning.edit", [config["pruning"]["edit"]], self.edits, "edits"),
            ("scaling.edits", config["scaling"]["edits"], self.edits, "edits"),
            ("data_efficiency.edits", config["data_efficiency"]["edits"], self.edits, "edits"),
            ("methods", config["methods"], METHODS, "the methods"),
            ("subskills.k", self.subskill_k() if self.subskills else [], self.k, "identification.k"),
            ("subskills.edit", [self.subskill_edit()] if self.subskills else [], self.edits, "edits"),
        ]:
            problems += [f"{key} names {label!r}, not among {what}: {sorted(defined)}"
                         for label in labels if label not in defined]
        for key, names in [
            ("pruning.methods", config["pruning"]["methods"]),
            ("scaling.methods", config["scaling"]["methods"]),
            ("data_efficiency.methods", self.data_efficiency_methods),
        ]:
            problems += [f"{key} has {name!r}, which is not in methods: {config['methods']}"
                         for name in names if name not in config["methods"]]
        fractions = (self.config["identification"].get("control_k") or {}).get("fractions", {})
        problems += [f"identification.control_k.fractions names K {k!r}, not among identification.k: "
                     f"{sorted(self.k)}" for k in fractions if k not in self.k]
        problems += [f"identification.k label {label!r} is the name of a set whose controls' K differs; rename it"
                     for label in self.composite_k if label in self.k]
        problems += self._dataset_problems() + self._model_problems()
        from mathneuro.tasks import unserved_tasks

        problems += self._subskill_problems() + self._synthetic_problems()
        return problems + unserved_tasks(self.suites, config["local_data"])

    def _dataset_problems(self) -> list[str]:
        from mathneuro.data import validate_spec

        problems = []
        for name, spec in self.config["datasets"].items():
            for reserved in ("n", "seed"):
                if reserved in spec:
                    problems.append(f"datasets.{name}.{reserved} is set by the workflow (identification.n_samples "
                                    "/ seeds, consistency.n_samples / seeds); remove it")
            try:
                validate_spec({**spec, "n": 1, "seed": 0})
            except ValueError as err:
                problems.append(f"datasets.{name}: {err}")
        return problems

    def _model_problems(self) -> list[str]:
        problems = []
        for name, model in self.config["models"].items():
            if model["path"] == "toy" and "synthetic" not in self.config:
                problems.append(f"models.{name}.path is 'toy' but the config has no synthetic section")
            if (model["path"] == "random") != ("architecture" in model):
                problems.append(f"models.{name}: `architecture` goes with path 'random', and only with it")
        return problems

    def input_problems(self, known_task=None) -> list[str]:
        """What the config names outside itself (mathneuro.configs): the used data sets' files
        (or those rule synthetic_data writes) and template fields, GGUF files, bits-per-byte data
        sets and, by ``known_task`` (default: :meth:`known_task`), the suites' tasks."""
        from mathneuro.configs import bpb_problems, check_data, gguf_problems, unknown_tasks

        config, evaluation = self.config, self.config["evaluation"]
        used = {name: config["datasets"][name] for name in self.all_datasets()}  # unused specs read nothing
        problems = check_data(used, config["local_data"], self.synthetic_files())
        problems += gguf_problems(config["models"])
        problems += bpb_problems(self.suites, config["datasets"], evaluation["heldout_split"])
        return problems + unknown_tasks(self.suites, known_task or self.known_task)

    # Sub-skills: several skills in one study, each set against the others and the controls ------

    def _subskill_problems(self) -> list[str]:
        if not self.subskills:
            return []
        sub, problems = self.subskills, []
        datasets = self.config["datasets"]
        for key, names in [("subskills.skills", sub["skills"]), ("subskills.controls", sub["controls"])]:
            problems += [f"{key} names data set {d!r}, not among datasets: {sorted(datasets)}"
                         for d in names if d not in datasets]
        problems += [f"subskills.controls has {d!r}, which is one of subskills.skills"
                     for d in sub["controls"] if d in sub["skills"]]
        if sub["method"] not in METHODS or METHODS[sub["method"]].top_k_set:
            made = [m for m in METHODS if not METHODS[m].top_k_set]
            problems.append(f"subskills.method {sub['method']!r} is not a method that makes sets: {made}")
        problems += [f"subskills.evaluate names suite {s!r}, not among evaluation.suites: "
                     f"{sorted(self.config['evaluation']['suites'])}"
                     for s in sub.get("evaluate") or [] if s not in self.config["evaluation"]["suites"]]
        problems += [f"subskills.suites.{s} is also an evaluation suite; name it apart"
                     for s in sub.get("suites", {}) if s in self.config["evaluation"]["suites"]]
        return problems

    def _synthetic_problems(self) -> list[str]:
        from mathneuro.synthetic import OPERATIONS

        tasks = self.config.get("synthetic", {}).get("tasks", {})
        return [f"synthetic.tasks.{t} must have math's sizes {tasks.get('math')} (its records are math's of one "
                f"operation), not {tasks[t]}" for t in OPERATIONS if t in tasks and tasks[t] != tasks.get("math")]

    def all_datasets(self) -> list[str]:
        """The data sets some set is made from: the skill's and controls', and the sub-skills'."""
        sub = self.subskills or {"skills": [], "controls": []}
        return list(dict.fromkeys([*self.datasets, *sub["skills"], *sub["controls"]]))

    def skill_label(self, skill: str) -> dict[str, str]:
        """An evaluation's ``skill`` label where its set is another skill's than the study's (a
        sub-skill's); the tables fill in the study's skill elsewhere, so finished evaluations keep
        their labels."""
        return {} if skill == self.skill else {"skill": skill}

    def subskill_k(self) -> list[str]:
        return (self.subskills or {}).get("k") or [self.consistency["k"]]

    def subskill_edit(self) -> str:
        return (self.subskills or {}).get("edit") or self.config["pruning"]["edit"]

    def subskill_controls(self, skill: str) -> list[str]:
        """What one sub-skill's set is made against: the other sub-skills, then the controls."""
        sub = self.subskills
        return [s for s in sub["skills"] if s != skill] + list(sub["controls"])

    def subskill_variants(self) -> list[tuple]:
        """(skill, method, control, n, seed, k, edit) of every sub-skill set the study prunes."""
        if not self.subskills:
            return []
        method = self.subskills["method"]
        return [(skill, method, control, self.n_samples, seed, self.set_k(method, k), self.subskill_edit())
                for skill in self.subskills["skills"] for control in method_controls(method, self.subskill_controls(skill))
                for seed in self.seeds for k in self.subskill_k()]

    def subskill_suites(self) -> list[str]:
        """The suites evaluated for the sub-skill sets: the chosen evaluation suites and their own."""
        if not self.subskills:
            return []
        chosen = self.subskills.get("evaluate")
        evaluation = list(self.config["evaluation"]["suites"]) if chosen is None else list(chosen)
        return evaluation + list(self.subskills.get("suites", {}))

    def subskill_overlaps(self) -> list[tuple]:
        """(method, n, seed, k) of each comparison of the sub-skill sets with one another."""
        if not self.subskills:
            return []
        method = self.subskills["method"]
        return [(method, self.n_samples, seed, self.set_k(method, k)) for seed in self.seeds for k in self.subskill_k()]

    def subskill_sets(self) -> dict[str, tuple[str, str]]:
        """Sub-skill -> (method, control label) of the set whose overlaps with the others' the
        study reports: made against the controls alone (against the other sub-skills too, as
        pruned, the sets are disjoint by construction), or its TopK set when there is no control."""
        method, controls = self.subskills["method"], self.subskills["controls"]
        pair = (method, method_controls(method, controls)[0]) if controls else (TOP_K_METHOD, NO_CONTROL)
        return {skill: pair for skill in self.subskills["skills"]}

    # Analyses ------------------------------------------------------------------------------------

    def analysis_axes(self, analysis: str) -> dict[str, list]:
        """What an edit analysis ('pruning', 'scaling', 'data_efficiency') evaluates, as the values
        of each column of the evaluations: aggregate selects the analysis's rows with it, and its
        variants are these values crossed, with every control of each method."""
        section = self.config[analysis]
        if analysis == "data_efficiency":
            return {"method": self.data_efficiency_methods, "n_samples": self.consistency["n_samples"],
                    "seed": self.consistency["seeds"], "k": self.data_efficiency_k, "edit": section["edits"]}
        return {"method": section["methods"], "n_samples": [self.n_samples], "seed": self.seeds, "k": section["k"],
                "edit": [section["edit"]] if analysis == "pruning" else section["edits"]}

    def variants(self, analysis: str) -> list[tuple]:
        """(method, control, n, seed, k, edit) of every evaluated variant of an analysis (k: the
        set's K label, composite where the controls' K differs)."""
        axes = self.analysis_axes(analysis)
        return [(method, control, n, seed, self.set_k(method, k), edit)
                for method in axes["method"] for control in method_controls(method, self.controls)
                for n in axes["n_samples"] for seed in axes["seed"] for k in axes["k"] for edit in axes["edit"]]

    def evaluated_variants(self) -> list[tuple]:
        """Every variant some edit analysis evaluates, once, in the analyses' order."""
        return list(dict.fromkeys(v for analysis in EDIT_ANALYSES for v in self.variants(analysis)))

    def study_k(self) -> list[str]:
        """The K labels the pruning, scaling and consistency analyses use, smallest first."""
        used = set(self.config["pruning"]["k"]) | set(self.config["scaling"]["k"]) | {self.consistency["k"]}
        return [k for k in self.k if k in used]

    def sets(self) -> list[tuple]:
        """(method, control, seed, k) of every set of the study's main draws (layer, share tables)."""
        return [(method, control, seed, self.set_k(method, k)) for method in self.config["methods"]
                for control in method_controls(method, self.controls) for seed in self.seeds for k in self.study_k()]

    def aggregate_params(self) -> dict[str, Any]:
        """What aggregate needs besides its inputs: each analysis's rows, the skill's tasks, and
        whose name the skill's TopK set takes."""
        selections = {a: {"skill": [self.skill], **self.analysis_axes(a)} for a in EDIT_ANALYSES}
        sub = self.subskills or {"skills": [], "method": None}  # off: a selection of no rows
        selections["subskills"] = {"skill": sub["skills"], "method": [sub["method"]], "n_samples": [self.n_samples],
                                   "seed": self.seeds, "k": self.subskill_k(), "edit": [self.subskill_edit()]}
        return {"selections": selections, "skill_tasks": self.skill_tasks, "skill": self.skill,
                "top_k_set": {"skill": self.skill, "method": TOP_K_METHOD}}

    # Data the workflow writes, and the evaluation suites ------------------------------------------

    def synthetic_files(self) -> dict[str, Any]:
        """The data files rule synthetic_data writes, each with a record like its first (None: the
        split has no records), standing in for the file until it is written."""
        from mathneuro.synthetic import OPERATIONS, generate

        section, made = self.config.get("synthetic", {}), {}
        for task, sizes in section.get("tasks", {}).items():
            few = 50 if task in OPERATIONS else 1  # enough of math's records to hold each operation
            splits = generate(task, n_train=min(sizes["n_train"], few), n_test=min(sizes["n_test"], few),
                              seed=section["seed"])
            for split, records in splits.items():
                made[f"{self.results}/data/synthetic/{task}/{split}.jsonl"] = records[0] if records else None
        return made

    def synthetic_tasks(self, trained: bool = False) -> list[str]:
        """The synthetic tasks (``trained``: those the toy model learns, with train texts of their
        own: not math's operation tasks, which hold math's records again)."""
        from mathneuro.synthetic import OPERATIONS

        tasks = self.config.get("synthetic", {}).get("tasks", {})
        return sorted(t for t, size in tasks.items()
                      if not trained or (size["n_train"] > 0 and t not in OPERATIONS))

    def known_task(self, task: str) -> bool:
        """A task the suites may name: generated, the project's, or in lm-eval's index (read only
        when a task is neither, since building it takes seconds the first time)."""
        from mathneuro.configs import lm_eval_task_names
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import project_task_names

        if is_generated_task(task) or task in project_task_names():
            return True
        if self._lm_eval_tasks is None:
            self._lm_eval_tasks = lm_eval_task_names(self.config["evaluation"]["include_path"])
        return task in self._lm_eval_tasks

    def suite_tasks(self, suite: str) -> list[str]:
        return self.suites[suite]["tasks"]

    def _generated_only(self, suite: str) -> bool:
        """A suite of bits-per-byte tasks alone: written from the config, reading no task files."""
        from mathneuro.evaluate import is_generated_task

        return all(is_generated_task(t) for t in self.suite_tasks(suite))

    def bpb_files(self, suite: str) -> list[str]:
        """The held-out files a suite's bpb_<data set> tasks read: a file spec's own, or the local
        copy of a hub data set's held-out split."""
        from mathneuro.configs import bpb_datasets
        from mathneuro.evaluate import heldout_spec

        split = self.config["evaluation"]["heldout_split"]
        return [f for dataset in bpb_datasets(self.suite_tasks(suite))
                for f in self.spec_files(heldout_spec(self.config["datasets"][dataset], split))]

    def bpb_params(self, suite: str) -> dict[str, Any]:
        """What the suite's bpb tasks are made from: their data sets' specs and the held-out split."""
        from mathneuro.configs import bpb_datasets

        datasets = bpb_datasets(self.suite_tasks(suite))
        if not datasets:
            return {}
        return {"specs": {d: canonical(self.config["datasets"][d]) for d in datasets},
                "split": self.config["evaluation"]["heldout_split"], "local_data": self.local_data}

    def suite_local_data(self, suite: str) -> dict[str, Any]:
        """The local_data entries a suite's tasks may read: for a suite of project tasks alone,
        those their data sets name (so data another suite reads never reruns it); otherwise every
        entry (which lm-eval task reads which is known only to lm-eval's index, built by the job)."""
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import project_configs

        read = [t for t in self.suite_tasks(suite) if not is_generated_task(t)]
        if not all(t in project_configs() for t in read):
            return self.local_data
        hub_ids = {project_configs()[t].get("dataset_path") for t in read}
        return {key: entry for key, entry in self.local_data.items()
                if key in hub_ids or hub_ids & set(entry.get("aliases") or [])}

    def suite_inputs(self, suite: str) -> dict[str, list[str]]:
        """Files a suite's task folder is made from, by name: the local data (the toy tasks'
        synthetic files among them) and the user's task files that its tasks may read."""
        include_path = self.config["evaluation"]["include_path"]
        if self._generated_only(suite):
            return {}
        user = {"user_tasks": sorted(str(p) for p in Path(include_path).rglob("*.yaml"))} if include_path else {}
        local = self.suite_local_data(suite)
        files = [f for hub_id, entry in local.items() for f in self.local_inputs(hub_id, ["*"], sorted(entry["files"]))]
        return {"local_data": files, **user}

    def suite_lm_eval(self, suite: str, lm_eval_version: str) -> dict[str, Any]:
        """What lm-eval's and the project's tasks in a suite depend on besides their names
        (nothing for a suite of bits-per-byte tasks alone)."""
        if self._generated_only(suite):
            return {}
        return {"include_path": self.config["evaluation"]["include_path"], "local_data": self.suite_local_data(suite),
                "version": lm_eval_version}

    # Models --------------------------------------------------------------------------------------

    def model(self, label: str) -> Mapping[str, Any]:
        if label not in self.config["models"]:
            raise ValueError(f"no model {label!r} in config.models")
        return self.config["models"][label]

    def model_dir(self, label: str) -> str | None:
        """Local folder of a model the workflow builds (toy, random, dequantized GGUF), else None."""
        spec = self.model(label)
        built = spec["path"] in ("toy", "random") or spec.get("gguf")
        return f"{self.results}/models/{label}" if built else None

    def models_built_as(self, kind: str) -> list[str]:
        """The models whose path is ``kind`` (toy, random), or that name a GGUF file ("gguf")."""
        return [label for label, spec in self.config["models"].items()
                if (bool(spec.get("gguf")) if kind == "gguf" else spec["path"] == kind)]

    def model_params(self, label: str) -> dict[str, Any]:
        """Everything a job needs to load the model (mathneuro.models.load_model): plain values."""
        spec = self.model(label)
        return {"path": self.model_dir(label) or spec["path"], "revision": spec["revision"], "dtype": spec["dtype"],
                "device": spec["device"], "device_map": "auto" if spec["gpus"] > 1 else None, "gpus": spec["gpus"],
                "offline": self.config["offline"]}

    def target_params(self) -> dict[str, Any]:
        """Which matrices are scored (every job that scores, collects or masks reads the same)."""
        ident = self.config["identification"]
        return {key: ident[key] for key in ("include", "exclude", "untied_lm_head")}

    def gguf_files(self, label: str) -> list[str]:
        """A GGUF model's file when its path is a local folder (a hub file is fetched by its job)."""
        from mathneuro.gguf import local_file

        spec = self.model(label)
        file = local_file(spec["path"], spec["gguf"])
        return [str(file)] if file else []

    def set_params(self, method: str, model: str) -> dict[str, Any]:
        """What a method reads besides its input files: the model and targets (methods that read
        statistics) and its own config section; plain values, nothing else."""
        m = METHODS[method]
        if m.reads != "statistics":
            return {}
        return {"model": self.model_params(model), "targets": self.target_params(),
                "settings": canonical(self.config[m.settings]) if m.settings else {}}

    def memory_mb(self, label: str, attempt: int, per_billion: int) -> int:
        """Host memory of a job on model ``label``: 4 GB plus ``per_billion`` MB per billion
        parameters, times the attempt (a job killed for memory is retried with more)."""
        return int((4000 + per_billion * float(self.model(label)["size_b"])) * attempt)

    def runtime_min(self, label: str, attempt: int, per_billion: float, floor: int = 10) -> int:
        """Minutes: ``per_billion`` per billion parameters, at least ``floor``, times the attempt."""
        return int(max(floor, math.ceil(per_billion * float(self.model(label)["size_b"]))) * attempt)

    # Data ----------------------------------------------------------------------------------------

    def release_dir(self, hub_id: str) -> str:
        """Where the workflow writes an MMLU release converted to hub records."""
        return f"{self.results}/data/local/{hub_id}"

    def _local_entry(self, hub_id: str, entry: Mapping[str, Any]) -> Mapping[str, Any]:
        """A local_data entry, an MMLU release replaced by the files it is converted to."""
        if "mmlu_release" not in entry:
            return entry
        files = {split: f"{self.release_dir(hub_id)}/{split}/{{name}}.jsonl" for split in RELEASE_SPLITS}
        return {"aliases": entry["aliases"], "files": files}

    def local_key(self, hub_id: str) -> str | None:
        """The local_data key that serves hub id ``hub_id`` (by key or alias), or None."""
        from mathneuro.data import local_entry

        entry = local_entry(self.local_data, hub_id)
        return next((key for key, e in self.local_data.items() if e is entry), None)

    def local_inputs(self, hub_id: str, names: list, splits: list[str]) -> list[str]:
        """What a local copy of ``hub_id`` reads for ``splits`` of configs ``names`` ("*": all)."""
        if hub_id in self.releases:
            return [self.release_dir(hub_id)]
        files = []
        for name in names:
            for split in splits:
                patterns = self.local_data[hub_id]["files"].get(split, [])
                for pattern in [patterns] if isinstance(patterns, str) else patterns:
                    files += existing_or_globbed(pattern.replace("{name}", name or ""))
        return files

    def spec_files(self, spec: Mapping[str, Any]) -> list[str]:
        """Every file reading data spec ``spec`` reads: its own files, or those of its local copy."""
        from mathneuro.configs import FILE_SOURCES
        from mathneuro.data import config_names, split_names

        if spec["source"] in FILE_SOURCES:
            return existing_or_globbed(spec["path"])
        key = self.local_key(spec["path"]) if spec["source"] == "hf" else None
        if key is None:
            return []
        return self.local_inputs(key, config_names(spec), split_names(spec.get("split") or "train"))

    def dataset_spec(self, dataset: str, n: int, seed: int) -> dict[str, Any]:
        """The spec a collection of ``n`` texts under ``seed`` reads (param of its job)."""
        return canonical({**self.config["datasets"][dataset], "n": int(n), "seed": int(seed)})

    def dataset_local_data(self, dataset: str) -> dict[str, Any]:
        """The local_data entry a data set is read from (param: changing it reruns the collection)."""
        spec = self.config["datasets"][dataset]
        key = self.local_key(spec["path"]) if spec["source"] == "hf" else None
        return {key: self.local_data[key]} if key else {}

    def prefetch(self) -> dict[str, Any]:
        """What a login node with internet fetches for offline compute nodes: the hub models,
        data sets and lm-eval tasks the study reads (none the workflow builds or reads locally)."""
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import local_only_data

        models = [{"path": m["path"], "revision": m["revision"]} for label, m in self.config["models"].items()
                  if not self.model_dir(label)]
        tasks = [t for suite in self.suites for t in self.suite_tasks(suite)
                 if not is_generated_task(t) and local_only_data(t) is None]
        return {"models": models, "datasets": self.hub_datasets(), "tasks": tasks,
                "include_path": self.config["evaluation"]["include_path"]}

    def hub_datasets(self) -> list[dict[str, Any]]:
        """The hub data sets the study reads from the hub (no local copy): what prefetch fetches."""
        specs = (self.config["datasets"][d] for d in self.all_datasets())
        return [{k: v for k, v in spec.items() if k in ("path", "name", "revision")}
                for spec in specs if spec["source"] == "hf" and self.local_key(spec["path"]) is None]
