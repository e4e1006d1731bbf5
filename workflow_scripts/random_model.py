"""A randomly initialised model of the configured architecture, with a byte-level BPE tokenizer
trained on the identification data sets' texts, saved as a Hugging Face checkpoint."""

import json
from pathlib import Path

from mathneuro.data import load_texts
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import fingerprint
from mathneuro.toy import random_model

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    texts = [text for spec in params.specs.values() for text in load_texts(spec, local_data=params.local_data)]
    random_model(texts, params.architecture, snakemake.output[0], log=log.info)
    (Path(snakemake.output[0]) / "mathneuro_code.json").write_text(json.dumps({"mathneuro_code": fingerprint()}))

end_job()
