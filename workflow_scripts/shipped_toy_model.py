"""Copy the shipped toy model into the workflow's model folder, once the train files are checked to
be those it was trained on (mathneuro.shipped_toy)."""

import json
from pathlib import Path

from mathneuro import shipped_toy
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import fingerprint

with log_to(snakemake.log[0]) as log:
    folder = snakemake.input.shipped[0]
    train_files = dict(zip(snakemake.params.tasks, snakemake.input.train))
    if problems := shipped_toy.data_problems(train_files, folder):
        raise ValueError(
            f"the synthetic train files differ from those the shipped toy in {folder} was trained on. Files written "
            "by an earlier version of mathneuro.synthetic stay until deleted (delete results/data/synthetic/ and run "
            "again); if the generators changed since the toy was shipped, retrain it with "
            "`python -m mathneuro.shipped_toy`:\n  " + "\n  ".join(problems))
    shipped_toy.copy_model(folder, snakemake.output[0])
    (Path(snakemake.output[0]) / "mathneuro_code.json").write_text(json.dumps({"mathneuro_code": fingerprint()}))
    record = shipped_toy.read_record(folder)
    log.info("copied the shipped toy (recipe %s, trained %s with %s) to %s", record["recipe_digest"][:12],
             record["made"], record["versions"], snakemake.output[0])

end_job()
