"""One method's set from its input files (mathneuro.methods.make_set), and its counts per matrix."""

import torch

from mathneuro.logs import end_job, log_to
from mathneuro.methods import READS, make_set
from mathneuro.provenance import write_parquet
from mathneuro.tables import mask_counts

with log_to(snakemake.log[0]) as log:
    params, inputs, output, wildcards = snakemake.params, snakemake.input, snakemake.output, snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    labels = params.labels
    files = {kind: list(inputs[kind]) for kind in READS if kind in inputs.keys()}
    mask = make_set(labels["method"], files, skill=wildcards.skill, seed=labels["seed"], k_fraction=labels["k_fraction"],
                    **params.inputs)
    mask.save(output.mask)
    parameters = mask.provenance["model_parameters"]
    write_parquet(mask_counts(mask, model_parameters=parameters, **labels), output.counts)
    log.info("k=%s %s/%s: %d of %d parameters", labels["k"], labels["method"], labels["control"], mask.count(), mask.numel())

end_job()
