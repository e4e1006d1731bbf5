"""Send everything a workflow job prints (logging, warnings, stdout, stderr) to its log file."""

from __future__ import annotations

import logging
from collections.abc import Iterator
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
