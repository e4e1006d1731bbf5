"""One PNG per table."""

from pathlib import Path

import pandas as pd

from mathneuro.logs import log_to
from mathneuro.plots import PLOTS

with log_to(snakemake.log[0]) as log:
    for table_path, plot_path in zip(snakemake.input, snakemake.output):
        name = Path(table_path).stem
        PLOTS[name](pd.read_parquet(table_path), plot_path)
        log.info("plotted %s", plot_path)
