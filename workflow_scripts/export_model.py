"""Export an edited model as a Hugging Face checkpoint in safetensors: a set scaled by a factor,
or what a fine-tuning edit trained put in (into its set's entries, or every parameter)."""

from mathneuro import ParameterMask, apply_mask, export_model
from mathneuro.finetune import apply_trained, load_trained
from mathneuro.logs import end_job, log_to
from mathneuro.models import load_weights

with log_to(snakemake.log[0]) as log:
    params, inputs = snakemake.params, snakemake.input
    model, tokenizer = load_weights(**params.model)
    if params.factor is not None:
        apply_mask(model, ParameterMask.load(inputs.mask), params.factor)
        log.info("edited the set by x%s", params.factor)
    if params.trained is not None:  # a fine-tuning edit: what its run trained, put in
        trained, _ = load_trained(inputs.trained)
        apply_trained(model, trained, ParameterMask.load(inputs.mask) if params.trained == "set" else None)
        log.info("put in what fine-tuning trained: %s, %d tensors", params.trained, len(trained))
    export_model(model, tokenizer, snakemake.output[0])
    log.info("exported to %s", snakemake.output[0])

end_job()
