"""Snakemake's own view of the workflow's jobs, for tests: run it, parse its dry runs, and fake a
finished run without running the jobs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from mathneuro.plan import Job, parse_jobs  # noqa: F401  (the tests' names for them)

REPO = Path(__file__).resolve().parents[1]
ALWAYS = {"aggregate", "plots", "all"}  # rerun whenever the study's set of results changes


def code_env(repo: Path) -> dict[str, str]:
    """The environment that runs the workflow of checkout ``repo`` with that checkout's library."""
    env = dict(os.environ)
    if repo != REPO:
        env["PYTHONPATH"] = os.pathsep.join([str(repo), *filter(None, [env.get("PYTHONPATH")])])
    return env


def snakemake(workdir: Path, configfile: Path, *args: str, check: bool = True,
              repo: Path = REPO) -> subprocess.CompletedProcess:
    """Snakemake on the workflow of checkout ``repo`` (this one by default) in ``workdir``, started
    in ``repo``: ``python -m`` puts the folder it starts in before PYTHONPATH, so started here it
    would import this checkout's library whatever ``repo`` is."""
    command = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(Path(configfile).resolve()), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=code_env(repo), cwd=repo)
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


def planned(workdir: Path, configfile: Path, *args: str, repo: Path = REPO) -> list[Job]:
    """The jobs `snakemake -n` would run in ``workdir`` (``--forceall`` among ``args``: every job)."""
    done = snakemake(workdir, configfile, "-n", *args, repo=repo)
    return parse_jobs(done.stdout + done.stderr)


def descendants(jobs: list[Job], roots: set[Job]) -> set[Job]:
    """``roots`` and every job that reads, directly or not, what they write."""
    found, frontier = set(roots), set(roots)
    while frontier:
        written = {f for job in frontier for f in job.outputs}
        frontier = {job for job in jobs if job not in found and job.inputs & written}
        found |= frontier
    return found


# `snakemake --touch --forceall` records each job as finished (params, code, inputs) without
# running it, but sleeps 0.1 s per job to space out file times; fake_finished_run spaces them itself.
TOUCH = ("import sys, snakemake.executors.touch as touch; touch.Executor.SLEEPING_TIME = 0; "
         "from snakemake.cli import main; sys.argv[0] = 'snakemake'; main()")


def fake_finished_run(workdir: Path, configfile: Path, repo: Path = REPO) -> list[Job]:
    """A finished run without running a job: every output created (empty files; folders for
    outputs without a suffix) with times that follow the DAG, then recorded by `--touch`."""
    jobs = planned(workdir, configfile, "--forceall", repo=repo)
    producer = {f: job for job in jobs for f in job.outputs}
    depth: dict[Job, int] = {}

    def level(job: Job) -> int:
        if job not in depth:
            depth[job] = 1 + max((level(producer[f]) for f in job.inputs if f in producer), default=0)
        return depth[job]

    start = 1_600_000_000
    for job in sorted(jobs, key=level):
        for name in job.outputs:
            path = workdir / name
            if path.suffix:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:
                path.mkdir(parents=True, exist_ok=True)
            os.utime(path, (start + level(job), start + level(job)))
    command = [sys.executable, "-c", TOUCH, "-s", str(repo / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(Path(configfile).resolve()), "--touch", "--forceall", "--cores", "1", "--quiet"]
    subprocess.run(command, check=True, capture_output=True, timeout=1200, env=code_env(repo), cwd=repo)
    return jobs


def fake_hub_cache(folder: Path, configfiles: list[Path]) -> Path:
    """A Hugging Face hub cache in ``folder`` holding every hub model (its ``config.json``, or its
    GGUF file) and hub data set the configs name, as ``snakemake prefetch`` would leave it, each
    file empty: offline configs then pass the workflow's cache check (mathneuro.hub) in dry runs.
    Set ``HF_HUB_CACHE`` to it."""
    from snakemake.utils import validate

    from mathneuro.configs import compose
    from mathneuro.study import Study

    for configfile in configfiles:
        config = compose([configfile])
        validate(config, str(REPO / "schemas" / "config.schema.yaml"))
        study = Study(config)
        repos = [("model", m["path"], m.get("revision"), m.get("gguf") or "config.json")
                 for m in config["models"].values() if m["path"] not in ("toy", "random")
                 and not Path(m["path"]).is_dir()]
        repos += [("dataset", d["path"], d.get("revision"), "README.md") for d in study.data.hub(study.all_datasets())]
        for kind, repo, revision, file in repos:
            root = folder / f"{kind}s--{repo.replace('/', '--')}"
            commit = revision or "0" * 40
            (root / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
            (root / "snapshots" / commit / file).touch()
            (root / "refs").mkdir(exist_ok=True)
            (root / "refs" / "main").write_text(commit)
    return folder


def write_config(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
