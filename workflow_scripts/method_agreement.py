"""How far two methods' sets agree (SNIP's and MathNeuro's, made from the same draw at the same
K against the same control): both ordered pairs (mathneuro.tables.set_overlaps)."""

from mathneuro import ParameterMask
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import AGREEMENT_NAMES, set_overlaps

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    masks = {method: ParameterMask.load(path) for method, path in zip(params.methods, snakemake.input)}
    table = set_overlaps(masks, AGREEMENT_NAMES, **params.labels)
    write_parquet(table, snakemake.output[0])
    log.info("\n%s", table.to_string())

end_job()
