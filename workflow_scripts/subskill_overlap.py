"""Overlap of the sub-skills' sets with one another: every ordered pair (mathneuro.tables.set_overlaps)."""

from mathneuro import ParameterMask
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import set_overlaps

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    masks = {skill: ParameterMask.load(path) for skill, path in zip(params.skills, snakemake.input)}
    table = set_overlaps(masks, **params.labels)
    write_parquet(table, snakemake.output[0])
    log.info("\n%s", table.pivot_table(index="skill_a", columns="skill_b", values="jaccard").to_string())

end_job()
