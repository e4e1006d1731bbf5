"""Convert MMLU's original release (CSV) into cais/mmlu hub records, one JSON-lines file per subject."""

from mathneuro.mmlu import write_mmlu_records
from mathneuro.logs import end_job, log_to

with log_to(snakemake.log[0]) as log:
    counts = write_mmlu_records(snakemake.input[0], snakemake.output[0])
    log.info("records per split: %s", counts)

end_job()
