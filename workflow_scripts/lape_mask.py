"""LAPE baseline: skill-specific MLP neurons by activation-probability entropy over every data set,
as a mask over their output weights."""

import torch

from mathneuro import ActivationStats, find_targets, lape_mask
from mathneuro.logs import log_to
from mathneuro.provenance import write_parquet
from mathneuro.models import load_weights
from mathneuro.tables import mask_counts

with log_to(snakemake.log[0]) as log:
    params, inputs, output = snakemake.params, snakemake.input, snakemake.output
    torch.set_num_threads(snakemake.threads)
    model, _ = load_weights(**params.model)
    stats = {s.metadata["dataset"]: s for s in map(ActivationStats.load, inputs.stats)}  # each names its data set
    targets = find_targets(model, **params.targets)
    mask = lape_mask(model, stats, params.skill, targets=targets, **params.settings)
    mask.save(output.mask)
    counts = mask_counts(mask, model_parameters=sum(p.numel() for p in model.parameters()), **params.labels)
    write_parquet(counts, output.counts)
    log.info("LAPE: %d parameters of %d", mask.count(), mask.numel())
