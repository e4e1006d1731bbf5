"""Overlap between sets identified from independent draws of the same number of samples: MathNeuro's
against one control, or one data set's TopK set (the rule's labels say which)."""

from mathneuro import ParameterMask
from mathneuro.logs import log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import pair_overlaps

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    masks = {seed: ParameterMask.load(path) for seed, path in zip(params.seeds, snakemake.input)}
    table = pair_overlaps(masks, **params.labels, k=params.k, k_fraction=params.fraction)
    write_parquet(table, snakemake.output[0])
    log.info("\n%s", table.to_string())
