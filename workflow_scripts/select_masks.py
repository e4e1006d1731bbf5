"""Top-K sets of every data set and the methods' masks, one K at a time (weights read on the CPU)."""

import itertools

import pandas as pd
import torch

from mathneuro import ActivationStats, find_targets, random_like, top_k
from mathneuro.logs import log_to
from mathneuro.models import load_weights
from mathneuro.tables import mask_counts

with log_to(snakemake.log[0]) as log:
    params, output = snakemake.params, snakemake.output
    torch.set_num_threads(snakemake.threads)
    datasets = [params.skill, *params.controls]
    topk_paths = dict(zip(itertools.product(datasets, params.fractions), output.topk))
    mask_paths = dict(zip(itertools.product(["mathneuro", "random"], params.controls, params.fractions), output.masks))
    model, _ = load_weights(**params.model)
    targets = find_targets(model, include=params.include, exclude=params.exclude)
    model_parameters = sum(p.numel() for p in model.parameters())
    stats = {d: ActivationStats.load(path) for d, path in zip(datasets, snakemake.input.stats)}
    counts = {control: [] for control in params.controls}

    def record(control, method, label, fraction, mask):
        labels = {**params.labels, "control": control, "method": method, "k": label, "k_fraction": fraction}
        counts[control].append(mask_counts(mask, model_parameters=model_parameters, **labels))
        log.info("k=%s %s/%s: %d of %d parameters", label, method, control, mask.count(), mask.numel())

    for label, fraction in params.fractions.items():
        top = {}
        for dataset in datasets:
            top[dataset] = top_k(model, stats[dataset], fraction, scope=params.scope, targets=targets)
            top[dataset].provenance.update(dataset=dataset, k=label, model_parameters=model_parameters)
            top[dataset].save(topk_paths[dataset, label])
        record(params.controls[0], "wanda", label, fraction, top[params.skill])
        for control in params.controls:
            specific = top[params.skill] - top[control]
            baseline = random_like(specific, seed=params.labels["seed"])
            specific.save(mask_paths["mathneuro", control, label])
            baseline.save(mask_paths["random", control, label])
            record(control, "mathneuro", label, fraction, specific)
            record(control, "random", label, fraction, baseline)
    for control, path in zip(params.controls, output.counts):
        frame = pd.concat(counts[control], ignore_index=True)
        frame.loc[frame["method"] == "wanda", "control"] = "none"
        frame.to_parquet(path, index=False)
