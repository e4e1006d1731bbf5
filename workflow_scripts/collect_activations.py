"""Activation statistics of one data set draw through one model (and LAPE's activation counts)."""

import json

import torch

from mathneuro import collect_statistics, find_targets, mlp_activations
from mathneuro.targets import unscored
from mathneuro.data import load_texts
from mathneuro.logs import end_job, log_to
from mathneuro.models import load_model, placement

with log_to(snakemake.log[0]) as log:
    params, wildcards = snakemake.params, snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    texts = load_texts(params.spec, local_data=params.local_data)  # data errors surface before the model loads
    model, tokenizer = load_model(**params.model, **placement(snakemake.resources.gpu))
    targets = find_targets(model, **params.targets)
    for name, shape in unscored(model, targets).items():  # left out by the config's patterns, on purpose
        log.info("not scored: %s %s", name, shape)
    lape = bool(mlp_activations(model))  # always counted where possible: adding LAPE reruns no collection
    log.info("%d texts, %d target matrices, statistic %s, LAPE counts %s", len(texts), len(targets), params.statistic, lape)
    stats = collect_statistics(
        model,
        tokenizer,
        texts,
        batch_size=params.batch_size,
        max_length=params.max_length,
        statistic=params.statistic,
        targets=targets,
        lape=lape,
        progress=lambda done, total: log.info("collected %d/%d", done, total),
    )
    stats.metadata.update(model=params.model["path"], model_revision=str(params.model["revision"]), dataset=wildcards.dataset,
                          spec=json.dumps(params.spec, sort_keys=True), n=wildcards.n, seed=wildcards.seed)
    stats.save(snakemake.output[0])
    log.info("%d tokens, %d samples truncated at %d tokens", stats.n_tokens, stats.n_truncated, params.max_length)

end_job()
