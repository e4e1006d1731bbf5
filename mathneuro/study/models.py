"""The models of a study: where each is loaded from, what a job passes to load it, and the
memory and time its jobs ask a cluster for."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BUILT = ("toy", "random", "planted")  # `path` values of models the workflow builds itself
# A model spec's keys that say where and how fast its jobs run, not what they compute: changing
# one reruns nothing (the rest of a spec reaches the jobs that read it as params). `threads` may
# move a float sum's last bits, as does a GPU against another; `device` (cpu or an accelerator)
# and the batch sizes do change results and rerun their jobs.
EXECUTION = ("gpus", "size_b", "threads")


class Models:
    """``config["models"]`` (label -> spec), read ``offline`` or not; models the workflow builds
    (toy, random, a dequantized GGUF file) live under ``results/models/<label>``."""

    def __init__(self, models: Mapping[str, Mapping[str, Any]], *, offline: bool, results: str = "results",
                 shipped_toy: str | None = None):
        self.specs, self.offline, self.results = models, offline, results
        self.shipped_toy = shipped_toy  # the shipped toy's folder when the config's recipe made it (mathneuro.shipped_toy)

    def __getitem__(self, label: str) -> Mapping[str, Any]:
        if label not in self.specs:
            raise ValueError(f"no model {label!r} in config.models")
        return self.specs[label]

    def __iter__(self):
        return iter(self.specs)

    def folder(self, label: str) -> str | None:
        """Local folder of a model the workflow builds (toy, random, dequantized GGUF), else None."""
        spec = self[label]
        built = spec["path"] in BUILT or spec.get("gguf")
        return f"{self.results}/models/{label}" if built else None

    def local_folder(self, label: str) -> str | None:
        """The folder a model the workflow does not build is read from, when its ``path`` is one
        on this machine (else None: a hub id, or a GGUF model's, whose folder is results')."""
        spec = self[label]
        if self.folder(label) or spec["path"] in BUILT:
            return None
        return spec["path"] if Path(spec["path"]).is_dir() else None

    def built_as(self, kind: str) -> list[str]:
        """The models whose path is ``kind`` (toy, random, planted), or that name a GGUF file ("gguf")."""
        return [label for label, spec in self.specs.items()
                if (bool(spec.get("gguf")) if kind == "gguf" else spec["path"] == kind)]

    def toys(self, *, shipped: bool) -> list[str]:
        """The toy models copied from the shipped toy (``shipped``), or those trained by the workflow."""
        return self.built_as("toy") if bool(self.shipped_toy) == shipped else []

    def params(self, label: str) -> dict[str, Any]:
        """What a job's results depend on in loading the model (mathneuro.models.load_model): plain
        values. Where it runs is not among them (:data:`EXECUTION`): the GPU count reaches a job as
        its ``gpu`` resource (``mathneuro.models.placement``), ``offline`` as the Hugging Face
        offline flags of the workflow's environment; changing either reruns nothing."""
        spec = self[label]
        return {"path": self.folder(label) or spec["path"], "revision": spec["revision"], "dtype": spec["dtype"],
                "device": spec["device"]}

    def gguf_files(self, label: str) -> list[str]:
        """A GGUF model's file when its path is a local folder (a hub file is fetched by its job)."""
        from mathneuro.gguf import local_file

        spec = self[label]
        file = local_file(spec["path"], spec["gguf"])
        return [str(file)] if file else []

    def hub(self) -> list[dict[str, Any]]:
        """The models read from the hub (path and revision): what prefetch fetches."""
        return [{"path": spec["path"], "revision": spec["revision"]} for label, spec in self.specs.items()
                if not self.folder(label)]

    def memory_mb(self, label: str, attempt: int, per_billion: int) -> int:
        """Host memory of a job on model ``label``: 4 GB plus ``per_billion`` MB per billion
        parameters, times the attempt (a job killed for memory is retried with more)."""
        return int((4000 + per_billion * float(self[label]["size_b"])) * attempt)

    def runtime_min(self, label: str, attempt: int, per_billion: float, floor: int = 10) -> int:
        """Minutes: ``per_billion`` per billion parameters, at least ``floor``, times the attempt."""
        return int(max(floor, math.ceil(per_billion * float(self[label]["size_b"]))) * attempt)

    def location_problems(self) -> list[str]:
        """Models whose ``path`` is neither the workflow's to build, nor a folder here, nor a name
        a hub repository can have: a mistyped local path, named with where it was looked for."""
        from mathneuro.hub import is_repo_id

        return [f"models.{label}.path: no folder {Path(spec['path']).resolve()} (paths are relative to the "
                f"working directory {Path.cwd()}), and {spec['path']!r} cannot name a hub repository"
                for label, spec in self.specs.items()
                if spec["path"] not in BUILT and not Path(spec["path"]).is_dir() and not is_repo_id(spec["path"])]

    def cache_problem(self, label: str) -> str | None:
        """Why an offline job could not load model ``label`` (None if it can): a hub model, or a
        GGUF file in a hub repository, that the local cache does not hold (mathneuro.hub)."""
        from mathneuro.hub import cache_problem

        spec = self[label]
        if not self.offline or spec["path"] in BUILT or Path(spec["path"]).is_dir():
            return None
        if spec.get("gguf"):
            return cache_problem(f"models.{label}.gguf", spec["path"], revision=spec["revision"], filename=spec["gguf"])
        return cache_problem(f"models.{label}.path", spec["path"], revision=spec["revision"], filename="config.json")

    def problems(self, synthetic: bool, datasets: Mapping[str, Any]) -> list[str]:
        """A toy model, or a planted one (its base is a toy), without the synthetic tasks it is
        trained on (``synthetic``: the config has them); an architecture given to any model but a
        random one, a plant to any but a planted one; a plant's data set not in ``datasets``."""
        problems = []
        for label, spec in self.specs.items():
            if spec["path"] in ("toy", "planted") and not synthetic:
                problems.append(f"models.{label}.path is {spec['path']!r} but the config has no synthetic section")
            if (spec["path"] == "random") != ("architecture" in spec):
                problems.append(f"models.{label}: `architecture` goes with path 'random', and only with it")
            if (spec["path"] == "planted") != ("plant" in spec):
                problems.append(f"models.{label}: `plant` goes with path 'planted', and only with it")
            elif "plant" in spec:
                named = {"data": [spec["plant"]["data"]], "rehearse": spec["plant"].get("rehearse", [])}
                problems += [f"models.{label}.plant.{key}: {name!r} is not in datasets"
                             for key, names in named.items() for name in names if name not in datasets]
        return problems
