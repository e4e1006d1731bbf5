"""One fine-tuning run (mathneuro.finetune): a set's entries, or every parameter, trained on a data
set's texts; what it trained saved (a set's values, or every parameter)."""

import torch

from mathneuro import ParameterMask
from mathneuro.data import load_texts
from mathneuro.finetune import finetune, save_trained
from mathneuro.logs import end_job, log_to
from mathneuro.models import load_model, placement

with log_to(snakemake.log[0]) as log:
    params, inputs = snakemake.params, snakemake.input
    run, settings = params.run, params.run["settings"]
    torch.set_num_threads(snakemake.threads)
    answers = settings["loss_on"] == "answer"
    texts = load_texts(run["texts"], local_data=run["local_data"], prompts=answers)  # before the model loads
    model, tokenizer = load_model(**params.model, **placement(snakemake.resources.gpu))
    mask = ParameterMask.load(inputs.mask) if "mask" in inputs.keys() else None
    scope = settings["train"]
    training = {key: settings[key] for key in ("steps", "batch_size", "lr", "optimizer", "weight_decay", "warmup",
                                               "max_length")}
    log.info("training %s on %d texts of %s (loss on %s): %s",
             "the set's entries" if scope == "set" else "every parameter", len(texts), settings["data"],
             "the answers" if answers else "every token", training)
    trained = finetune(model, tokenizer, list(texts), mask if scope == "set" else None,
                       start_factor=run["start_factor"], start_mask=mask,
                       seed=settings["seed"] + int(snakemake.wildcards.seed), log=log.info,
                       prompt_chars=list(texts.prompt_chars) if answers else None, **training)
    save_trained(trained, snakemake.output[0], scope=scope, settings=settings, edit=snakemake.wildcards.edit,
                 texts=run["texts"], mask=mask.provenance if mask is not None else None)
    log.info("saved %d tensors (%d values)", len(trained), sum(t.numel() for t in trained.values()))

end_job()
