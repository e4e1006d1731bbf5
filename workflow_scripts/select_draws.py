"""MathNeuro masks of the consistency draws: TopK(skill) - TopK(control) at one K, per sample count."""

import itertools

import torch

from mathneuro import ActivationStats, find_targets, top_k
from mathneuro.logs import log_to
from mathneuro.models import load_weights

with log_to(snakemake.log[0]) as log:
    params = snakemake.params
    torch.set_num_threads(snakemake.threads)
    datasets = [params.skill, *params.controls]
    stats_paths = dict(zip(itertools.product(datasets, params.sizes), snakemake.input.stats))
    mask_paths = dict(zip(itertools.product(params.controls, params.sizes), snakemake.output))
    model, _ = load_weights(**params.model)
    targets = find_targets(model, include=params.include, exclude=params.exclude)
    for n in params.sizes:
        top = {}
        for dataset in datasets:
            top[dataset] = top_k(model, ActivationStats.load(stats_paths[dataset, n]), params.fraction,
                                 scope=params.scope, targets=targets)
            top[dataset].provenance.update(dataset=dataset, k=params.k, n_samples=n)
        for control in params.controls:
            specific = top[params.skill] - top[control]
            specific.save(mask_paths[control, n])
            log.info("n=%d k=%s mathneuro/%s: %d of %d parameters", n, params.k, control, specific.count(), specific.numel())
