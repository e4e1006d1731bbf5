"""Evaluate one model variant (unedited, or a mask applied with a factor) on one lm-eval suite:
the tidy results, lm-eval's own results JSON, and the per-sample records."""

from pathlib import Path

import torch

from mathneuro import ParameterMask, apply_mask
from mathneuro.evaluate import results_frame, results_json, run_lm_eval, samples_frame
from mathneuro.finetune import apply_trained, load_trained
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.models import load_model, placement

with log_to(snakemake.log[0]) as log:
    params, inputs, output, suite = snakemake.params, snakemake.input, snakemake.output, snakemake.params.suite
    torch.set_num_threads(snakemake.threads)
    model, tokenizer = load_model(**params.model, **placement(snakemake.resources.gpu))
    log.info("%s: %s on %s, batch size %s", params.model["path"], model.dtype, model.device, params.batch_size)
    if params.factor is not None:
        mask = ParameterMask.load(inputs.mask)
        apply_mask(model, mask, params.factor)  # the job ends with the model; nothing to restore
        log.info("edited %d parameters by x%s", mask.count(), params.factor)
    if "trained" in inputs.keys():  # a fine-tuning edit: what its run trained, put in
        trained, _ = load_trained(inputs.trained)
        mask = ParameterMask.load(inputs.mask) if params.trained == "set" else None
        apply_trained(model, trained, mask)
        log.info("put in what fine-tuning trained: %s, %d tensors", params.trained, len(trained))
    options = ("limit", "subset", "num_fewshot", "max_gen_toks", "gen_kwargs", "apply_chat_template",
               "fewshot_as_multiturn", "system_instruction")
    results = run_lm_eval(model, tokenizer, suite["tasks"], include_path=inputs.tasks, batch_size=params.batch_size,
                          **{key: suite[key] for key in options})
    log.info("batch sizes: %s", results["mathneuro_run"]["batch_sizes"])
    labels = {**params.labels, **{key: suite[key] for key in ("apply_chat_template", "fewshot_as_multiturn", "system_instruction")}}
    table = results_frame(results)
    samples = samples_frame(results, text=params.labels["method"] == "base")  # the items' texts once, with the unedited model's
    for frame in (table, samples):
        for column, value in labels.items():
            frame[column] = value
    write_parquet(table, output.table)
    write_parquet(samples, output.samples)
    Path(output.results).write_text(results_json(results))
    log.info("\n%s", table.to_string())
    log.info("%d per-item records kept", len(samples))

end_job()
