"""Overlap between sets identified from independent draws of the same number of samples: MathNeuro's
against one control, or one data set's TopK set (the rule's labels say which); over the whole model
(output pairs) and per layer and module type (output layers)."""

from mathneuro import ParameterMask
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import pair_layer_overlaps, pair_overlaps

with log_to(snakemake.log[0]) as log:
    params, output = snakemake.params, snakemake.output
    masks = {seed: ParameterMask.load(path) for seed, path in zip(params.seeds, snakemake.input)}
    labels = {**params.labels, "k": params.k, "k_fraction": params.fraction}
    table = pair_overlaps(masks, **labels)
    write_parquet(table, output.pairs)
    log.info("\n%s", table.to_string())
    layers = pair_layer_overlaps(masks, **labels)
    write_parquet(layers, output.layers)
    log.info("per layer and module type: %d rows\n%s", len(layers),
             layers.pivot_table(index="layer", columns="module", values="jaccard", dropna=False).to_string())

end_job()
