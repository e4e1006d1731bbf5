"""The data a study reads: which files each data set and each local copy of a hub data set
reads (the inputs that rerun its jobs when they change), and the files the workflow writes itself
(the synthetic tasks)."""

from __future__ import annotations

import glob
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mathneuro.study.common import canonical

RELEASE_SPLITS = ("dev", "validation", "test")  # the hub splits an MMLU release is converted to


def existing_or_globbed(pattern: str) -> list[str]:
    """A file name as it is (a missing one is reported by Snakemake), or a glob's sorted matches."""
    return sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]


class Data:
    """``config["datasets"]`` (data set -> spec), ``config["local_data"]`` (hub id -> local
    files or an MMLU release) and ``config["synthetic"]``; outputs under ``results``."""

    def __init__(self, config: Mapping[str, Any], results: str = "results"):
        self.specs, self.results = config["datasets"], results
        self.synthetic = config.get("synthetic", {})
        self.releases = {hub: e["mmlu_release"] for hub, e in config["local_data"].items() if "mmlu_release" in e}
        self.local_data = {hub: canonical(self._local_entry(hub, e)) for hub, e in config["local_data"].items()}

    # Local copies of hub data sets ---------------------------------------------------------------

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

    # Data sets -----------------------------------------------------------------------------------

    def spec_files(self, spec: Mapping[str, Any]) -> list[str]:
        """Every file reading data spec ``spec`` reads: its own files, or those of its local copy."""
        from mathneuro.configs import FILE_SOURCES
        from mathneuro.data import config_names, file_pattern, split_names

        if spec["source"] in FILE_SOURCES:
            return existing_or_globbed(file_pattern(spec))
        key = self.local_key(spec["path"]) if spec["source"] == "hf" else None
        if key is None:
            return []
        return self.local_inputs(key, config_names(spec), split_names(spec.get("split") or "train"))

    def files(self, dataset: str) -> list[str]:
        """Every file data set ``dataset`` reads."""
        return self.spec_files(self.specs[dataset])

    def spec(self, dataset: str, n: int, seed: int) -> dict[str, Any]:
        """The spec a collection of ``n`` texts under ``seed`` reads (param of its job): held-out
        texts in a file of their own are not among what it reads, nor in it."""
        spec = dict(self.specs[dataset])
        if "path" in (spec.get("heldout") or {}):
            del spec["heldout"]
        return canonical({**spec, "n": int(n), "seed": int(seed)})

    def local_data_of(self, dataset: str) -> dict[str, Any]:
        """The local_data entry a data set is read from (param: changing it reruns the collection)."""
        spec = self.specs[dataset]
        key = self.local_key(spec["path"]) if spec["source"] == "hf" else None
        return {key: self.local_data[key]} if key else {}

    def cache_problem(self, dataset: str, offline: bool) -> str | None:
        """Why an offline collection could not read hub data set ``dataset`` (None if it can):
        no local copy, and the local hub cache does not hold it (mathneuro.hub)."""
        from mathneuro.hub import cache_problem

        spec = self.specs[dataset]
        if not offline or spec["source"] != "hf" or self.local_key(spec["path"]) or Path(spec["path"]).is_dir():
            return None
        return cache_problem(f"datasets.{dataset}.path", spec["path"], repo_type="dataset", revision=spec.get("revision"))

    def hub(self, datasets: list[str]) -> list[dict[str, Any]]:
        """Those of ``datasets`` read from the hub (no local copy): what prefetch fetches."""
        specs = (self.specs[d] for d in datasets)
        return [{k: v for k, v in spec.items() if k in ("path", "name", "revision")}
                for spec in specs if spec["source"] == "hf" and self.local_key(spec["path"]) is None]

    # The synthetic tasks rule synthetic_data writes ----------------------------------------------

    def synthetic_files(self) -> dict[str, Any]:
        """The data files rule synthetic_data writes, each with a record like its first (None: the
        split has no records), standing in for the file until it is written."""
        from mathneuro.synthetic import OPERATIONS, generate

        made = {}
        for task, sizes in self.synthetic.get("tasks", {}).items():
            few = 50 if task in OPERATIONS else 1  # enough of math's records to hold each operation
            splits = generate(task, n_train=min(sizes["n_train"], few), n_test=min(sizes["n_test"], few),
                              seed=self.synthetic["seed"])
            for split, records in splits.items():
                made[f"{self.results}/data/synthetic/{task}/{split}.jsonl"] = records[0] if records else None
        return made

    def synthetic_tasks(self, trained: bool = False) -> list[str]:
        """The synthetic tasks (``trained``: those the toy model learns, with train texts of their
        own: not math's operation tasks, which hold math's records again)."""
        from mathneuro.synthetic import trained_tasks

        tasks = self.synthetic.get("tasks", {})
        return trained_tasks(tasks) if trained else sorted(tasks)

    def problems(self) -> list[str]:
        """Data specs that set what the workflow sets, or that the data loader refuses; operation
        tasks whose sizes are not math's."""
        from mathneuro.data import validate_spec
        from mathneuro.synthetic import OPERATIONS

        problems = []
        for name, spec in self.specs.items():
            for reserved in ("n", "seed"):
                if reserved in spec:
                    problems.append(f"datasets.{name}.{reserved} is set by the workflow (identification.n_samples "
                                    "/ seeds, consistency.n_samples / seeds); remove it")
            try:
                validate_spec({**spec, "n": 1, "seed": 0})
            except ValueError as err:
                problems.append(f"datasets.{name}: {err}")
        tasks = self.synthetic.get("tasks", {})
        return problems + [f"synthetic.tasks.{t} must have math's sizes {tasks.get('math')} (its records are math's "
                           f"of one operation), not {tasks[t]}"
                           for t in OPERATIONS if t in tasks and tasks[t] != tasks.get("math")]
