"""Concatenate per-job results into the paper's tables (tidy Parquet) and their summaries."""

import json
from pathlib import Path

from mathneuro.intermediates import read
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import build_tables, name_top_k_set, read_tables, samples_table

with log_to(snakemake.log[0]) as log:
    params, inputs, output = snakemake.params, snakemake.input, snakemake.output
    samples = read_tables(inputs.samples)
    groups = {(model, suite): read(path, lambda p: json.loads(Path(p).read_text())).get("group_subtasks", {})
              for (model, suite), path in zip(params.base_evaluations, inputs.base_results)}
    tables = build_tables(  # every row with the versions of the job that wrote it
        read_tables(inputs.evaluations, versions=True),
        name_top_k_set(read_tables(inputs.counts, versions=True), **params.top_k_set),
        read_tables(inputs.consistency, versions=True),
        read_tables(inputs.layer_overlaps, versions=True),
        read_tables(inputs.subskill_overlaps, versions=True) if inputs.subskill_overlaps else None,
        agreements=read_tables(inputs.agreements, versions=True),
        localizations=read_tables(inputs.localizations, versions=True),
        selections=params.selections,
        samples=samples,
        groups=groups,
        skill_tasks=params.skill_tasks,
        skill=params.skill,
    )
    table_paths = {Path(p).stem: p for p in output.tables}
    summary_paths = {Path(p).stem.removesuffix("_summary"): p for p in output.summaries}
    for name, (table, summary) in tables.items():
        write_parquet(table, table_paths[name])
        write_parquet(summary, summary_paths[name])
        log.info("%s: %d rows, summary %d rows", name, len(table), len(summary))
    samples = samples_table(samples)
    write_parquet(samples, output.samples)
    log.info("samples: %d rows", len(samples))

end_job()
