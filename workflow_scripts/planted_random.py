"""A random set of the planted set's count in every matrix, drawn under the repeat's seed
(mathneuro.masks.random_like): the baseline the planted set is pruned against."""

from mathneuro import ParameterMask, random_like
from mathneuro.logs import end_job, log_to

with log_to(snakemake.log[0]) as log:
    truth = ParameterMask.load(snakemake.input[0])
    drawn = random_like(truth, seed=int(snakemake.wildcards.seed))
    drawn.provenance["model_parameters"] = truth.provenance.get("model_parameters")
    drawn.save(snakemake.output[0])
    log.info("%d entries drawn at random in %d matrices, as many in each as the planted set", drawn.count(), len(drawn))

end_job()
