"""The top-K set of one data set's importance scores |W| · stat, weights read on the CPU one matrix
at a time from the checkpoint (or from the loaded model when the checkpoint's names differ)."""

from contextlib import ExitStack

import torch

from mathneuro import ActivationStats, top_k
from mathneuro.logs import end_job, log_to
from mathneuro.provenance import write_parquet
from mathneuro.models import load_weights, stored_weights
from mathneuro.tables import mask_counts
from mathneuro.targets import stored_targets

with log_to(snakemake.log[0]) as log, ExitStack() as stack:
    params, output, dataset = snakemake.params, snakemake.output, snakemake.wildcards.dataset
    torch.set_num_threads(snakemake.threads)
    stats = ActivationStats.load(snakemake.input.stats)
    names = [info["param"] for info in stats.layout.values()]
    try:
        read = stack.enter_context(stored_weights(**params.model, names=names))
    except LookupError as err:
        log.info("%s; loading the model instead", err)
        weights = dict(load_weights(**params.model)[0].named_parameters())
        read = lambda name: weights[name].detach()  # noqa: E731
    targets = stored_targets(stats.layout, read)
    mask = top_k(None, stats, params.fraction, scope=params.scope, targets=targets)
    model_parameters = int(stats.metadata["model_parameters"])
    mask.provenance.update(dataset=dataset, k=params.labels["k"], model_parameters=model_parameters)
    mask.save(output.mask)
    write_parquet(mask_counts(mask, model_parameters=model_parameters, **params.labels), output.counts)
    log.info("k=%s %s: %d of %d parameters", params.labels["k"], dataset, mask.count(), mask.numel())

end_job()
