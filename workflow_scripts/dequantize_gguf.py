"""A GGUF checkpoint dequantized once into a Hugging Face folder (safetensors) that every job reads."""

import json
from pathlib import Path

from mathneuro.gguf import dequantize
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import fingerprint

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    dequantize(params.path, params.file, snakemake.output[0], revision=params.revision, log=log.info)
    (Path(snakemake.output[0]) / "mathneuro_code.json").write_text(json.dumps({"mathneuro_code": fingerprint()}))

end_job()
