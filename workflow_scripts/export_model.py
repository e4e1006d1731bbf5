"""Export an edited model (mask x factor) as a Hugging Face checkpoint in safetensors."""

from mathneuro import ParameterMask, apply_mask, export_model
from mathneuro.logs import end_job, log_to
from mathneuro.models import load_weights

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    model, tokenizer = load_weights(**params.model)
    apply_mask(model, ParameterMask.load(snakemake.input.mask), params.factor)
    export_model(model, tokenizer, snakemake.output[0])
    log.info("exported to %s", snakemake.output[0])

end_job()
