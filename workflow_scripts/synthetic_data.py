"""Write one synthetic task's train and test splits as JSON lines."""

from mathneuro import synthetic
from mathneuro.logs import end_job, log_to

with log_to(snakemake.log[0]) as log:
    task, params = snakemake.wildcards.task, snakemake.params
    splits = synthetic.generate(task, n_train=params.n_train, n_test=params.n_test, seed=params.seed)
    for split, records in splits.items():
        synthetic.write_jsonl(records, snakemake.output[split])
        log.info("%s/%s: %d records", task, split, len(records))

end_job()
