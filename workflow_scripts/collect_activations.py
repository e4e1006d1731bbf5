"""Activation statistics of one data set draw through one model: of all its n texts (rule
collect_activations), or of the first n texts for several n in one pass (rule collect_draws)."""

import torch

from mathneuro import collect_prefix_statistics, find_targets
from mathneuro.data import load_texts
from mathneuro.logs import log_to
from mathneuro.models import go_offline, load_model

with log_to(snakemake.log[0]) as log:
    params, wildcards = snakemake.params, snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    if params.model["offline"]:
        go_offline()
    texts = load_texts(params.spec)  # data errors surface before the model is loaded
    model, tokenizer = load_model(**params.model)
    targets = find_targets(model, include=params.include, exclude=params.exclude)
    log.info("%d texts, %d target matrices, statistic %s, sizes %s", len(texts), len(targets), params.statistic, params.sizes)
    prefixes = collect_prefix_statistics(
        model,
        tokenizer,
        texts,
        params.sizes,
        batch_size=params.batch_size,
        max_length=params.max_length,
        statistic=params.statistic,
        targets=targets,
        lape=params.lape,
        progress=lambda done, total: log.info("collected %d/%d", done, total),
    )
    for n, path in zip(params.sizes, snakemake.output):
        stats = prefixes[n]
        stats.metadata.update(model=params.model["path"], dataset=wildcards.dataset, n=str(n),
                              seed=wildcards.seed, draw_size=str(len(texts)))
        stats.save(path)
        log.info("n=%d: %d tokens, %d samples truncated at %d tokens", n, stats.n_tokens, stats.n_truncated, params.max_length)
