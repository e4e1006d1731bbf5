"""SNIP importance of one data set draw through one model (mathneuro.snip): Σ |W ⊙ ∇W L| per sample."""

import json
import time

import torch

from mathneuro import find_targets
from mathneuro.data import load_texts
from mathneuro.logs import end_job, log_to
from mathneuro.models import load_model, placement
from mathneuro.snip import snip_scores

with log_to(snakemake.log[0]) as log:
    params, wildcards = snakemake.params, snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    texts = load_texts(params.spec, local_data=params.local_data)  # data errors surface before the model loads
    model, tokenizer = load_model(**params.model, **placement(snakemake.resources.gpu))
    targets = find_targets(model, **params.targets)
    log.info("%d texts, %d target matrices, one at a time", len(texts), len(targets))
    start = time.perf_counter()
    scores = snip_scores(model, tokenizer, texts, max_length=params.max_length, targets=targets)
    scores.metadata.update(model=params.model["path"], model_revision=str(params.model["revision"]),
                           dataset=wildcards.dataset, spec=json.dumps(params.spec, sort_keys=True), n=wildcards.n,
                           seed=wildcards.seed)
    scores.save(snakemake.output[0])
    log.info("%d tokens in %.1f s; %d samples truncated at %d tokens", scores.n_tokens, time.perf_counter() - start,
             scores.n_truncated, params.max_length)

end_job()
