"""Evaluate one model variant (unedited, or a mask applied with a factor) on one lm-eval suite."""

import torch

from mathneuro import ParameterMask, apply_mask
from mathneuro.evaluate import evaluate
from mathneuro.logs import log_to
from mathneuro.models import load_model

with log_to(snakemake.log[0]) as log:
    params, inputs = snakemake.params, snakemake.input
    torch.set_num_threads(snakemake.threads)
    model, tokenizer = load_model(**params.model)
    log.info("%s: %s on %s, batch size %s", params.model["path"], model.dtype, model.device, params.batch_size)
    if params.factor is not None:
        mask = ParameterMask.load(inputs.mask)
        apply_mask(model, mask, params.factor)  # the job ends with the model; nothing to restore
        log.info("edited %d parameters by x%s", mask.count(), params.factor)
    suite = params.suite
    table = evaluate(
        model,
        tokenizer,
        suite["tasks"],
        include_path=inputs.tasks,
        limit=suite["limit"],
        num_fewshot=suite["num_fewshot"],
        max_gen_toks=suite["max_gen_toks"],
        batch_size=params.batch_size,
    )
    for column, value in params.labels.items():
        table[column] = value
    table.to_parquet(snakemake.output[0], index=False)
    log.info("\n%s", table.to_string())
