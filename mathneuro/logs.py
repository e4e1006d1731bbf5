"""Send everything a workflow job prints (logging, warnings, stdout, stderr) to its log file."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import NoReturn
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path


@contextmanager
def log_to(path: str | Path) -> Iterator[logging.Logger]:
    """Within the block, all output goes to ``path``; an exception is logged with its traceback."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", buffering=1) as handle, redirect_stdout(handle), redirect_stderr(handle):
        logging.basicConfig(
            stream=handle, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", force=True
        )
        logging.captureWarnings(True)
        logger = logging.getLogger("mathneuro")
        try:
            yield logger
        except BaseException:
            logger.exception("job failed")
            raise


def end_job() -> NoReturn:
    """End a workflow job's process once its outputs are written and closed: exit status 0,
    without finalising the interpreter's modules.

    Python's teardown of torch, transformers and lm-eval (some 400,000 objects freed one by one)
    takes 0.7 s (torch alone) to 1.8 s (an evaluation's imports) at the end of every job, work no
    process whose outputs are complete needs (``benchmarks/bench_startup.py``). The exit handlers
    still run first, as at any exit (logging's flush, file locks released, child processes
    joined); then standard output and error are flushed and the process ends (``os._exit``).
    Call it as a script's last statement, after its ``with log_to(...)`` block: a failing job
    never reaches it and exits with its traceback as before."""
    import atexit
    import os
    import sys

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
