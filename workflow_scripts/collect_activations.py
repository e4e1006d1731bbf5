"""Activation statistics of one data set draw (n samples, seed) through one model."""

import torch

from mathneuro import collect_statistics, find_targets
from mathneuro.data import load_texts
from mathneuro.logs import log_to
from mathneuro.models import go_offline, load_model

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    torch.set_num_threads(snakemake.threads)
    if params.model["offline"]:
        go_offline()
    texts = load_texts(params.spec)  # data errors surface before the model is loaded
    model, tokenizer = load_model(**params.model)
    targets = find_targets(model, include=params.include, exclude=params.exclude)
    log.info("%d texts, %d target matrices, statistic %s", len(texts), len(targets), params.statistic)
    stats = collect_statistics(
        model,
        tokenizer,
        texts,
        batch_size=params.batch_size,
        max_length=params.max_length,
        statistic=params.statistic,
        targets=targets,
        lape=params.lape,
        progress=lambda done, total: log.info("collected %d/%d", done, total),
    )
    stats.metadata.update(model=params.model["path"], dataset=snakemake.wildcards.dataset,
                          n=str(len(texts)), seed=snakemake.wildcards.seed)
    stats.save(snakemake.output[0])
    log.info("%d tokens, %d samples truncated at %d tokens", stats.n_tokens, stats.n_truncated, params.max_length)
