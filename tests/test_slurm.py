"""Run the whole workflow through Slurm, with the user's profile (profiles/slurm).

Needs a reachable Slurm cluster with the partitions of profiles/slurm/partitions.yaml
(``cpu``, and ``gpu`` whose nodes offer a GPU GRES). On a workstation or CI machine, start a throw-away one:

    apt-get install -y slurmctld slurmd slurm-client munge   # as root
    ci/slurm/start.sh /tmp/slurm-ci && source /tmp/slurm-ci/env
    MATHNEURO_REQUIRE_SLURM=1 pytest -m slurm
    ci/slurm/stop.sh /tmp/slurm-ci

Without Slurm the test is skipped (with the reason), unless
MATHNEURO_REQUIRE_SLURM=1, which turns the skip into a failure so that a CI job
meant to exercise Slurm cannot pass by skipping.

What it proves: the profile's options are accepted by the installed Snakemake
and executor plugin; every non-local rule is submitted with sbatch, the rules
whose jobs ask for a GPU (found in the workflow's own dry run, not listed here)
with ``--gpus=<n>`` to the GPU partition and all others to the CPU partition,
without a GPU; the jobs run and the workflow writes its result tables. Then a changed value
(a suite's item limit) reruns that suite's evaluations on Slurm, side by side: each rewritten
output keeps the time its job wrote and Snakemake's record says so, and the next run plans
nothing.

Knob (environment): MATHNEURO_SLURM_TIMEOUT (seconds for the whole run, default 3600).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
TINY_CONFIG = REPO / "tests" / "configs" / "tiny.yaml"

PARTITIONS_FILE = PROFILE.with_name("partitions.yaml")
# The profile's partitions: the GPU one (max_gpu > 0) and the CPU one; the test cluster has both.
_LIMITS = yaml.safe_load(PARTITIONS_FILE.read_text())["partitions"]
GPU_PARTITION = next(name for name, limits in _LIMITS.items() if limits.get("max_gpu", 0) > 0)
CPU_PARTITION = next(name for name, limits in _LIMITS.items() if limits.get("max_gpu", 0) == 0)
PARTITION = CPU_PARTITION
TIMEOUT_S = int(os.environ.get("MATHNEURO_SLURM_TIMEOUT", "3600"))


# --------------------------------------------------------------------------- #
# Is there a Slurm to talk to?
# --------------------------------------------------------------------------- #
def slurm_unavailable_reason(partition: str = PARTITION) -> str | None:
    """None if `partition` (and the GPU partition) have a responding node that can take jobs,
    else why not."""
    hint = "start one with ci/slurm/start.sh and source its env file"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[workflow]')"
    if shutil.which("sinfo") is None:
        return f"no Slurm here: 'sinfo' is not on PATH ({hint})"
    try:
        proc = subprocess.run(
            ["sinfo", "--noheader", f"--partition={partition}", "--format=%T"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return "Slurm unreachable: 'sinfo' did not answer within 20 s"
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        return f"Slurm unreachable: sinfo failed ({err[-1] if err else proc.returncode}; {hint})"
    # A trailing '*' means "not responding"; idle/mixed nodes can start jobs.
    states = proc.stdout.split()
    if not any(s in ("idle", "mixed") for s in states):
        return f"no usable node in Slurm partition {partition!r} (states: {states or 'none'})"
    if partition != GPU_PARTITION:
        return slurm_unavailable_reason(GPU_PARTITION)
    return None


@pytest.fixture(scope="module")
def slurm_partition() -> str:
    reason = slurm_unavailable_reason()
    if reason is not None:
        if os.environ.get("MATHNEURO_REQUIRE_SLURM") == "1":
            pytest.fail(f"MATHNEURO_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)
    return PARTITION


# --------------------------------------------------------------------------- #
# Helpers (also usable by hand against another Snakefile)
# --------------------------------------------------------------------------- #
# What the single-node test cluster needs on top of the user's profile, given on the command line
# (which wins over the profile); everything else (executor, partitions.yaml, resources, log
# folder...) is the user's profile unchanged, so that the test exercises it.
TEST_CLUSTER_ARGS = [
    # No slurmdbd, so no sacct: read states with squeue. The plugin keeps to squeue only while
    # MinJobAge (300 s in ci/slurm) >= 3 x the first delay.
    "--slurm-status-command", "squeue",
    "--slurm-init-seconds-before-status-checks", "1",
    "--slurm-no-account",  # no accounts on the test cluster
    "--slurm-keep-successful-logs",  # every job's Slurm log, to show it when something fails
    "--latency-wait", "5",  # local file system: no need to wait for NFS
    "--retries", "0",  # fail fast
]  # fmt: skip


def install_profile(config_home: Path) -> dict[str, str]:
    """Run the set-up's profile step with its own user config folder; return the environment in
    which `snakemake --profile slurm` (the bare name) finds this repository's profile."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home)}
    subprocess.run(["bash", str(REPO / "ci" / "install_profile.sh")], env=env, check=True, capture_output=True)
    return env


def declared_local_rules() -> set[str]:
    """The rules the workflow declares `localrules` (run in the Snakemake process)."""
    text = "\n".join(p.read_text() for p in [SNAKEFILE, *sorted((REPO / "rules").glob("*.smk"))])
    return {name for block in re.findall(r"^localrules:\n((?:[ \t]+\w+,?\n)+)", text, re.M)
            for name in re.findall(r"\w+", block)}


def workflow_rules(configfile: Path, workdir: Path) -> tuple[set[str], set[str], set[str]]:
    """(GPU rules, CPU rules, local rules) of the run, from the workflow itself: its dry run (a
    rule is a GPU rule when its jobs ask for `gpu` > 0) and its `localrules` declarations.
    Nothing is listed by hand, so a new rule is never missed."""
    from dag import planned

    jobs = planned(workdir, configfile, "--forceall")
    local = declared_local_rules()
    gpu = {j.rule for j in jobs if j.rule not in local and j.res.get("gpu", 0) > 0}
    return gpu, {j.rule for j in jobs if j.rule not in local} - gpu, local


def make_test_config(dest: Path, configfile: Path | None = None) -> Path:
    """The tiny config, every model asking for one GPU (the node has two), one repeat, one K and
    fewer methods.

    The tiny models run on the CPU (device: cpu); asking Slurm for a GPU anyway
    exercises the GPU path of the submission (--gpus, CUDA_VISIBLE_DEVICES)
    without needing one: the CI node's GPUs are stand-ins. One repeat, one K, the
    main sample count and, of the methods, those the other analyses use and one
    per kind of importance keep every rule of the DAG (each Slurm job costs two
    Snakemake start-ups and the plugin's polling) at under half its jobs.
    """
    from mathneuro.methods import METHODS

    configfile = configfile or TINY_CONFIG
    cfg = yaml.safe_load(configfile.read_text())
    models = cfg.get("models") or {}
    assert models, f"{configfile} defines no models"
    for model in models.values():
        model["gpus"] = 1
    k = cfg["consistency"]["k"]
    cfg["identification"]["seeds"] = cfg["identification"]["seeds"][:1]
    cfg["pruning"]["k"] = cfg["scaling"]["k"] = [k]
    cfg["consistency"]["n_samples"] = [cfg["identification"]["n_samples"]]
    kept = {m for analysis in ("scaling", "finetuning", "data_efficiency") for m in cfg[analysis].get("methods", [])}
    first_of_kind = {}
    for method in cfg["pruning"]["methods"]:
        first_of_kind.setdefault(METHODS[method].importance, method)
    kept |= set(first_of_kind.values())
    cfg["methods"] = cfg["pruning"]["methods"] = [m for m in cfg["pruning"]["methods"] if m in kept]
    dest.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def run_snakemake(args: list[str], log: Path, timeout_s: int, cwd: Path = REPO, env: dict | None = None) -> int:
    """Run Snakemake in its own process group and kill the whole group on timeout.

    The Slurm plugin's status loop can hang for good (and ignore SIGTERM) when
    job states cannot be read, so a plain timeout is not enough.
    """
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        try:
            return proc.wait(timeout=timeout_s)
        except BaseException:  # the timeout, or pytest itself interrupted
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            cancel_run_jobs(log)
            raise


def run_uuid(log_text: str) -> str | None:
    """The plugin names every job after the run's UUID; find it in the log."""
    m = re.search(r"SLURM run ID: (\S+)", log_text)
    return m.group(1) if m else None


def cancel_run_jobs(log: Path) -> None:
    """Best effort: scancel the jobs of a run whose Snakemake we had to kill."""
    uuid = run_uuid(log.read_text(errors="replace"))
    if uuid:
        subprocess.run(["scancel", f"--name={uuid}"], timeout=30, check=False)


@dataclass
class Job:
    """One job of the run, as Snakemake's --verbose log describes it."""

    jobid: str
    rule: str
    local: bool  # "localrule X:" (ran in the Snakemake process) or "rule X:"
    gpus: int  # its `gpu` resource, 0 if none
    slurm_id: str | None = None
    slurm_log: Path | None = None
    sbatch: str | None = None  # the sbatch options, without --wrap


_JOB_HEADER = re.compile(r"^(local)?rule (\w+):$")
_SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


def parse_jobs(log_text: str) -> dict[str, Job]:
    """Snakemake job id -> Job, with its sbatch call if it was submitted.

    Uses the job blocks ("rule X:" + indented "jobid:"/"resources:" lines), the
    plugin's "sbatch call:" lines and its "Job N has been submitted with SLURM
    jobid M (log: ...)" lines; a call is matched to its job through the log
    file it names (--output .../%j.log with %j = M).
    """
    jobs: dict[str, Job] = {}
    calls: dict[str, str] = {}  # --output template -> sbatch options
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        header = _JOB_HEADER.match(line)
        if header:
            fields = {}
            for body in lines[i + 1 :]:
                if not body.startswith("    "):
                    break
                key, _, value = body.strip().partition(": ")
                fields[key] = value
            resources = dict(
                item.split("=", 1) for item in fields.get("resources", "").split(", ") if "=" in item
            )
            jobid = fields.get("jobid")
            if jobid is None:  # not a job description
                continue
            jobs[jobid] = Job(jobid, header[2], bool(header[1]), int(resources.get("gpu", 0)))
        elif "sbatch call:" in line:
            options = line.split("sbatch call:", 1)[1].split(" --wrap", 1)[0]
            words = shlex.split(options)
            calls[words[words.index("--output") + 1]] = " ".join(words)
        elif submitted := _SUBMITTED.search(line):
            jobid, slurm_id, slurm_log = submitted.groups()
            job = jobs[jobid]
            job.slurm_id, job.slurm_log = slurm_id, Path(slurm_log)
    for job in jobs.values():
        if job.slurm_log is not None:
            template = str(job.slurm_log.with_name("%j.log"))
            job.sbatch = calls.get(template)
    return jobs


def tail(path: Path, lines: int = 60) -> str:
    if not path.exists():
        return f"({path} missing)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def failed_job_logs(log_text: str) -> str:
    """Tails of the (Slurm and rule) logs Snakemake names in its error messages."""
    paths = sorted(set(re.findall(r"log: (\S+\.log)", log_text)))
    return "\n".join(f"----- {p}\n{tail(Path(p), 40)}" for p in paths)


# --------------------------------------------------------------------------- #
# The test
# --------------------------------------------------------------------------- #
def test_workflow_runs_on_slurm(slurm_partition: str, tmp_path: Path) -> None:
    assert SNAKEFILE.exists(), f"{SNAKEFILE} missing"
    assert TINY_CONFIG.exists(), f"{TINY_CONFIG} missing"
    env = install_profile(tmp_path / "config_home")
    configfile = make_test_config(tmp_path / "config.yaml")
    workdir = tmp_path / "work"
    gpu_rules, cpu_rules, local_rules = workflow_rules(configfile, tmp_path / "plan")
    every_rule = workflow_rules(TINY_CONFIG, tmp_path / "plan_tiny")
    assert (gpu_rules, cpu_rules) == every_rule[:2], "the smaller config leaves out rules of the tiny config's"
    log = tmp_path / "snakemake.log"

    args = [
        "--snakefile", str(SNAKEFILE),
        "--profile", "slurm",  # the bare name, as the README has it
        *TEST_CLUSTER_ARGS,
        "--configfile", str(configfile),
        "--directory", str(workdir),
        "--verbose",  # makes the plugin log each `sbatch call:`
    ]  # fmt: skip
    try:
        rc = run_snakemake(args, log, TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"Snakemake on Slurm did not finish within {TIMEOUT_S} s (process group "
            f"killed, jobs cancelled). Log tail:\n{tail(log)}"
        )
    text = log.read_text(errors="replace")
    assert rc == 0, (
        f"Snakemake on Slurm failed (exit {rc}). Log tail:\n{tail(log)}\n"
        f"{failed_job_logs(text)}"
    )

    # Job states were read with squeue throughout (sacct would hang here).
    assert "Falling back to 'sacct'" not in text
    assert "command=squeue" in text

    # The workflow's products.
    study = yaml.safe_load(TINY_CONFIG.read_text())["study"]
    tables = sorted((workdir / "results" / "tables" / study).glob("*.parquet"))
    assert tables, f"no results/tables/{study}/*.parquet written"
    assert (workdir / "results" / "tables" / study / "pruning.parquet") in tables
    for table in tables:
        assert table.stat().st_size > 0, f"{table} is empty"

    # What was submitted, and how.
    jobs = parse_jobs(text)
    assert jobs, "no job descriptions in the log (was --verbose dropped?)"
    local = {j.rule for j in jobs.values() if j.local}
    remote = [j for j in jobs.values() if not j.local]
    assert not local & (gpu_rules | cpu_rules), f"cluster rules ran locally: {local}"
    remote_rules = {j.rule for j in remote}
    assert not remote_rules & local_rules, f"local rules went to Slurm: {remote_rules & local_rules}"
    assert gpu_rules and gpu_rules <= remote_rules, f"GPU rules never submitted: {gpu_rules - remote_rules}"
    assert cpu_rules <= remote_rules, f"CPU rules never submitted: {cpu_rules - remote_rules}"
    gpu_jobs_seen: set[str] = set()  # the CUDA_VISIBLE_DEVICES values GPU jobs were given
    for job in remote:
        what = f"job {job.jobid} ({job.rule})"
        assert job.slurm_id is not None, f"{what} was never submitted to Slurm"
        call = job.sbatch
        assert call is not None, f"{what}: no `sbatch call:` line found"
        # The plugin chose the partition from partitions.yaml and the job's own `gpu`.
        partition = GPU_PARTITION if job.rule in gpu_rules else CPU_PARTITION
        assert f"-p {partition}" in call, f"{what}: not sent to partition {partition!r}: {call}"
        assert re.search(r" -t \d+", call), f"{what}: no runtime in {call}"
        assert re.search(r" --mem \d+", call), f"{what}: no memory in {call}"
        assert (job.gpus >= 1) == (job.rule in gpu_rules), f"{what}: gpu={job.gpus}"
        if job.gpus:
            assert re.search(rf" --gpus={job.gpus}\b", call), f"{what} asked no GPU: {call}"
            # Slurm's side: the job got as many of the node's GPUs as it asked (the job-step
            # plugin logs its environment with --verbose; the log is kept).
            job_log = job.slurm_log.read_text(errors="replace")
            visible = re.search(r"'CUDA_VISIBLE_DEVICES': '([\d,]+)'", job_log)
            assert visible, f"{what}: no CUDA_VISIBLE_DEVICES in its Slurm log {job.slurm_log}"
            assert len(visible[1].split(",")) == job.gpus, f"{what}: given GPUs {visible[1]}"
            gpu_jobs_seen.add(visible[1])
        else:
            assert "--gpus" not in call and "--gres" not in call, f"CPU {what} asked a GPU: {call}"
    # The test cluster's two stand-in GPUs were both handed out: GPU jobs ran side by side.
    assert len(gpu_jobs_seen) == 2, f"GPU jobs were given only {gpu_jobs_seen}"

    # A changed value reruns its jobs on Slurm once. A suite's item limit (the sub-skill study's
    # suite: three evaluations) reruns its evaluations two at a time, one per stand-in GPU: each
    # job parses the workflow again while the other has just written its outputs, which the
    # planning Snakemake records only when it sees them end. Every rerun output
    # keeps the time its job wrote (a job's parse sets no time back, rules/common.smk), later than
    # the first run's record, and the next run plans nothing.
    rerun_output_times(configfile, workdir, tmp_path, env)


def rerun_output_times(configfile: Path, workdir: Path, tmp_path: Path, env: dict[str, str]) -> None:
    from dag import planned

    from mathneuro.freshness import recorded_outputs

    config = yaml.safe_load(configfile.read_text())
    suites = config["subskills"]["suites"]  # the sub-skill study's own suite: its few evaluations
    suite = next(iter(suites))
    suites[suite]["limit"] -= 1
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config, sort_keys=False))
    expected = planned(workdir, changed)
    evaluations = {f for job in expected if job.rule.startswith("evaluate") for f in job.outputs}
    assert len({job for job in expected if job.rule.startswith("evaluate")}) >= 2, "too few jobs to overlap"
    first = recorded_outputs(workdir / ".snakemake" / "metadata")
    log = tmp_path / "rerun.log"
    args = ["--snakefile", str(SNAKEFILE), "--profile", "slurm", *TEST_CLUSTER_ARGS, "--configfile", str(changed),
            "--directory", str(workdir)]
    rc = run_snakemake(args, log, TIMEOUT_S, env=env)
    assert rc == 0, f"the rerun on Slurm failed (exit {rc}):\n{tail(log)}"
    records = recorded_outputs(workdir / ".snakemake" / "metadata")
    for output in sorted(evaluations):
        written = (workdir / output).stat().st_mtime
        assert written > first[output]["endtime"] + 1, f"{output} has its earlier run's time"
        assert abs(written - records[output]["endtime"]) < 60, f"{output}: not the time its record says"
    assert planned(workdir, changed) == [], "a rerun output reruns again"
