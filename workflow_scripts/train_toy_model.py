"""Train the toy model on the synthetic tasks' train splits and save it as a HF checkpoint."""

import json
from pathlib import Path

from mathneuro.logs import end_job, log_to
from mathneuro.provenance import fingerprint
from mathneuro.toy import train_toy

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    train_files = dict(zip(params.tasks, snakemake.input.train))
    train_toy(train_files, snakemake.output[0], **params.hyperparameters, num_threads=snakemake.threads, log=log.info)
    (Path(snakemake.output[0]) / "mathneuro_code.json").write_text(json.dumps({"mathneuro_code": fingerprint()}))

end_job()
