"""How well each set the study found on a planted model recovers the set S its skill was planted in
(mathneuro.tables.localization), one block of rows per set."""

import pandas as pd

from mathneuro import ParameterMask
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import ALL_MODULES, localization

with log_to(snakemake.log[0]) as log:
    truth = ParameterMask.load(snakemake.input.truth)
    table = pd.concat([localization(ParameterMask.load(path), truth, **labels)
                       for path, labels in zip(snakemake.input.sets, snakemake.params.labels)], ignore_index=True)
    write_parquet(table, snakemake.output[0])
    log.info("\n%s", table[table["module"] == ALL_MODULES].to_string())

end_job()
