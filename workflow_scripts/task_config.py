"""Write the lm-eval task YAML of one synthetic task, pointing at its local test file."""

from pathlib import Path

from mathneuro.evaluate import write_task_yamls
from mathneuro.logs import log_to

with log_to(snakemake.log[0]) as log:
    (path,) = write_task_yamls({snakemake.wildcards.task: snakemake.input.test}, Path(snakemake.output[0]).parent)
    if Path(path) != Path(snakemake.output[0]):
        raise RuntimeError(f"task YAML written to {path}, expected {snakemake.output[0]}")
    log.info("wrote %s", path)
