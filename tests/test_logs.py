"""A workflow job's log (mathneuro.logs): everything it prints goes to its file, and end_job
ends a finished job without the interpreter's teardown, losing nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

JOB = """
import atexit, sys
from pathlib import Path
from mathneuro.logs import end_job, log_to

atexit.register(lambda: Path({ran!r}).write_text("exit handlers ran"))
with log_to({log!r}) as log:
    log.info("working")
    print("printed", end="")  # unflushed: the log file is line-buffered, this line has no newline
    print("to stderr", file=sys.stderr, end="")
    {body}
end_job()
print("never reached")
"""


def run_job(tmp_path: Path, body: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    log, ran = tmp_path / "job.log", tmp_path / "ran"
    script = textwrap.dedent(JOB).format(log=str(log), ran=str(ran), body=body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    return done, log, ran


def test_a_finished_job_exits_0_with_its_log_flushed_and_exit_handlers_run(tmp_path):
    done, log, ran = run_job(tmp_path, "pass")
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert "working" in text and "printed" in text and "to stderr" in text
    assert ran.read_text() == "exit handlers ran"
    assert "never reached" not in done.stdout


@pytest.mark.parametrize("error", ["ValueError('bad input')", "SystemExit(3)"])
def test_a_failing_job_never_reaches_end_job_and_exits_with_its_error(tmp_path, error):
    done, log, ran = run_job(tmp_path, f"raise {error}")
    assert done.returncode != 0
    assert "job failed" in log.read_text()
    assert ran.exists()  # the interpreter's own exit, handlers included
