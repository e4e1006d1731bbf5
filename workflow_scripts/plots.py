"""The figures (mathneuro.analyses.FIGURES) and each table's summary as an HTML page, for the report."""

from pathlib import Path

import pandas as pd

from mathneuro.intermediates import read
from mathneuro.logs import end_job, log_to
from mathneuro.analyses import FIGURES
from mathneuro.plots import draw, summary_html

with log_to(snakemake.log[0]) as log:
    inputs, output = snakemake.input, snakemake.output
    summaries = {Path(p).stem.removesuffix("_summary"): p for p in inputs.summaries}
    figures = {Path(p).stem: p for p in output.figures}
    pages = {Path(p).stem: p for p in output.summaries}
    tables = {Path(p).stem: read(p, pd.read_parquet) for p in inputs.tables}
    for figure, table in FIGURES.items():
        draw(figure, tables[table], figures[figure], summary=read(summaries[table], pd.read_parquet))
        log.info("drew %s from table %s", figures[figure], table)
    for name, page in pages.items():
        Path(page).write_text(summary_html(read(summaries[name], pd.read_parquet), name))
        log.info("summary of %s: %s", name, page)

end_job()
