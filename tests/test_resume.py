"""A run killed at any point (kill -9 of Snakemake's whole process group) and resumed gives the
tables of an uninterrupted run, value for value: here killed inside an evaluation job."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from dag import planned, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"
UNDONE = "n8/seed1/k10pct"  # the evaluations undone (every method, edit), the tables with them


def tables(workdir: Path) -> dict[str, pd.DataFrame]:
    folder = workdir / "results" / "tables" / "tiny"
    return {p.name: pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))}


def undo(workdir: Path) -> list[Path]:
    """Remove some evaluations of a finished run (outputs and logs) and its tables: the run to
    interrupt has those left to do. Returns the removed evaluations' log files."""
    evaluations = sorted((workdir / "results" / "toy" / "eval").glob(f"*/*/*/{UNDONE}"))
    logs = sorted((workdir / "logs" / "evaluate" / "toy").glob(f"*/*/*/{UNDONE}/*/*.log"))
    assert len(evaluations) >= 4 and len(logs) >= len(evaluations)
    for folder in evaluations:
        shutil.rmtree(folder)
    for log in logs:
        log.unlink()
    shutil.rmtree(workdir / "results" / "tables")
    return [log.relative_to(workdir) for log in logs]


def start(workdir: Path, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(TINY), "--cores", "1"]
    with log.open("w") as handle:  # its own process group, so that one signal kills every job it runs
        return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def wait_inside_an_evaluation(process: subprocess.Popen, workdir: Path, logs: list[Path], timeout=600) -> Path:
    """The log of the first evaluation job that has loaded and edited the model (lm-eval is
    running), once it has; fails if the run ends or the time runs out first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in logs:
            path = workdir / log
            if path.is_file() and "edited" in path.read_text(errors="replace"):
                return log
        assert process.poll() is None, "the run ended before an evaluation job was seen running"
        time.sleep(0.2)
    raise AssertionError("no evaluation job started in time")


def test_a_run_killed_inside_an_evaluation_and_resumed_gives_the_uninterrupted_tables(tiny_run, tmp_path):
    reference = tables(tiny_run)
    assert reference
    work = tmp_path / "work"
    shutil.copytree(tiny_run, work, symlinks=True)
    logs = undo(work)

    process = start(work, tmp_path / "interrupted.log")
    try:
        killed = wait_inside_an_evaluation(process, work, logs)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    # What a kill mid-write leaves: the job's first output begun (the job writes three), the
    # others not; Snakemake's record says the job did not finish.
    output = work / "results" / "toy" / "eval" / killed.relative_to("logs/evaluate/toy").with_suffix(".parquet")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(b"PAR1 cut off")
    assert any((work / ".snakemake" / "incomplete").iterdir())
    assert not (work / "results" / "tables").exists()

    # Resumed as docs/caching.md says: the killed run's lock released, the incomplete job rerun.
    snakemake(work, TINY, "--unlock")
    snakemake(work, TINY, "--rerun-incomplete", "--cores", "2")

    resumed = tables(work)
    assert list(resumed) == list(reference)
    for name, frame in reference.items():
        pd.testing.assert_frame_equal(resumed[name], frame, obj=name)
    assert planned(work, TINY) == []
