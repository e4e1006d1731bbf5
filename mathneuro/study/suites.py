"""The evaluation suites: their tasks, and what each suite's task folder is made from (the
files and settings whose change rebuilds it, and reruns the evaluations that read it)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mathneuro.study.common import canonical
from mathneuro.study.data import Data


class Suites:
    """``evaluation.suites`` and the suites the sub-skill study evaluates alone (``extra``), with
    the data (``data``) their bits-per-byte and project tasks read."""

    def __init__(self, evaluation: Mapping[str, Any], data: Data, skill: str,
                 extra: Mapping[str, Any] | None = None):
        self.evaluation, self.data = evaluation, data
        self.evaluated = list(evaluation["suites"])  # every edited variant's suites
        self.specs = {**evaluation["suites"], **(extra or {})}  # label -> suite, every suite
        self.skill_tasks = evaluation["skill_tasks"] or [
            t for suite in evaluation["suites"].values() for t in suite["tasks"] if skill in t
        ]
        self._lm_eval_tasks: frozenset[str] | None = None

    def __iter__(self):
        return iter(self.specs)

    def tasks(self, suite: str) -> list[str]:
        return self.specs[suite]["tasks"]

    def spec(self, suite: str) -> dict[str, Any]:
        """A suite's settings as its evaluations read them (param: a change reruns them)."""
        return canonical(self.specs[suite])

    def known_task(self, task: str) -> bool:
        """A task the suites may name: generated, the project's, or in lm-eval's index (read only
        when a task is neither, since building it takes seconds the first time)."""
        from mathneuro.configs import lm_eval_task_names
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import project_task_names

        if is_generated_task(task) or task in project_task_names():
            return True
        if self._lm_eval_tasks is None:
            self._lm_eval_tasks = lm_eval_task_names(self.evaluation["include_path"])
        return task in self._lm_eval_tasks

    def generated_only(self, suite: str) -> bool:
        """A suite of bits-per-byte tasks alone: written from the config, reading no task files."""
        from mathneuro.evaluate import is_generated_task

        return all(is_generated_task(t) for t in self.tasks(suite))

    def hub_tasks(self) -> list[str]:
        """The tasks of every suite whose data comes from the hub (no local copy): what prefetch
        fetches."""
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import local_only_data

        return [t for suite in self.specs for t in self.tasks(suite)
                if not is_generated_task(t) and not local_only_data(t)]

    # Bits per byte of data sets' held-out texts --------------------------------------------------

    def bpb_files(self, suite: str) -> list[str]:
        """The held-out files a suite's bpb_<data set> tasks read: a file spec's own, or the local
        copy of a hub data set's held-out split."""
        from mathneuro.configs import bpb_datasets
        from mathneuro.evaluate import heldout_spec

        split = self.evaluation["heldout_split"]
        return [f for dataset in bpb_datasets(self.tasks(suite))
                for f in self.data.spec_files(heldout_spec(self.data.specs[dataset], split))]

    def bpb_params(self, suite: str) -> dict[str, Any]:
        """What the suite's bpb tasks are made from: the specs of their data sets' held-out texts
        (mathneuro.evaluate.heldout_spec: what the job reads, not the identification's file)."""
        from mathneuro.configs import bpb_datasets
        from mathneuro.evaluate import heldout_spec

        datasets = bpb_datasets(self.tasks(suite))
        if not datasets:
            return {}
        split = self.evaluation["heldout_split"]
        return {"specs": {d: canonical(heldout_spec(self.data.specs[d], split)) for d in datasets},
                "local_data": self.data.local_data}

    # lm-eval's and the project's tasks -----------------------------------------------------------

    def local_data(self, suite: str) -> dict[str, Any]:
        """The local_data entries a suite's tasks may read: for a suite of project tasks alone,
        those their data sets name (so data another suite reads never reruns it); otherwise every
        entry (which lm-eval task reads which is known only to lm-eval's index, built by the job)."""
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import project_configs, project_data

        local = self.data.local_data
        read = [t for t in self.tasks(suite) if not is_generated_task(t)]
        if not all(t in project_configs() for t in read):
            return local
        hub_ids = {hub_id for t in read for hub_id in project_data(t)}
        return {key: entry for key, entry in local.items()
                if key in hub_ids or hub_ids & set(entry.get("aliases") or [])}

    def definition_files(self, suite: str) -> list[str]:
        """The files that define a suite's tasks, the project's and the user's
        (``mathneuro.tasks.definition_files``; lm-eval's own come with its version)."""
        from mathneuro.evaluate import is_generated_task
        from mathneuro.tasks import definition_files

        named = [t for t in self.tasks(suite) if not is_generated_task(t)]
        return definition_files(named, self.evaluation["include_path"]) if named else []

    def project_files(self, suite: str) -> list[str]:
        """Those of the suite's definition files that are the project's (``mathneuro/lm_tasks``):
        part of the workflow, like its scripts, they reach the suite's job as a param of their
        content, not as inputs (whose paths would rerun a checkout at another path)."""
        from mathneuro.tasks import PROJECT_TASKS

        return [f for f in self.definition_files(suite) if Path(f).is_relative_to(PROJECT_TASKS)]

    def user_files(self, suite: str) -> list[str]:
        """The others: the user's (``evaluation.include_path``), inputs of the suite's job."""
        from mathneuro.tasks import PROJECT_TASKS

        return [f for f in self.definition_files(suite) if not Path(f).is_relative_to(PROJECT_TASKS)]

    def inputs(self, suite: str) -> dict[str, list[str]]:
        """Files a suite's task folder is made from, by name: the local data (the toy tasks'
        synthetic files among them) and the user's files that define its tasks."""
        if self.generated_only(suite):
            return {}
        files = [f for hub_id, entry in self.local_data(suite).items()
                 for f in self.data.local_inputs(hub_id, ["*"], sorted(entry["files"]))]
        user = self.user_files(suite)
        return {"local_data": files, **({"user_tasks": user} if user else {})}

    def lm_eval(self, suite: str, lm_eval_version: str) -> dict[str, Any]:
        """What lm-eval's and the project's tasks in a suite depend on besides their names
        (nothing for a suite of bits-per-byte tasks alone)."""
        if self.generated_only(suite):
            return {}
        return {"include_path": self.evaluation["include_path"], "local_data": self.local_data(suite),
                "version": lm_eval_version}

    def problems(self, local_data: Mapping[str, Any]) -> list[str]:
        """Suites that ask for two kinds of item subset, and tasks whose data no hub holds and no
        ``local_data`` entry serves."""
        from mathneuro.tasks import unserved_tasks

        both = [f"evaluation.suites.{s}: limit (lm-eval's first items) and subset (seeded items) are both set; "
                "give one" for s, spec in self.specs.items() if spec.get("limit") and spec.get("subset")]
        return both + unserved_tasks(self.specs, local_data)

    def input_problems(self, known_task=None) -> list[str]:
        """Bits-per-byte tasks of unknown data sets or without held-out texts, and (by
        ``known_task``, default :meth:`known_task`) tasks lm-eval does not know."""
        from mathneuro.configs import bpb_problems, unknown_tasks

        include = self.evaluation["include_path"]
        if include and not Path(include).is_dir():
            return [f"evaluation.include_path: no folder {Path(include).resolve()} (paths are relative to the "
                    f"working directory {Path.cwd()})"]
        problems = bpb_problems(self.specs, self.data.specs, self.evaluation["heldout_split"])
        return problems + unknown_tasks(self.specs, known_task or self.known_task)
