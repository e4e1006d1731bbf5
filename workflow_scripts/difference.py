"""MathNeuro's set TopK(skill) - TopK(control), or minus the union of several controls' TopK sets,
and (when the rule asks for it) the random baseline of the same count per matrix."""

from mathneuro import ParameterMask, random_like, specific
from mathneuro.logs import log_to
from mathneuro.provenance import write_parquet
from mathneuro.tables import mask_counts

with log_to(snakemake.log[0]) as log:
    params, inputs, output = snakemake.params, snakemake.input, snakemake.output
    skill = ParameterMask.load(inputs.skill)
    model_parameters = skill.provenance["model_parameters"]
    sets = {params.method: specific(skill, *map(ParameterMask.load, inputs.controls))}
    if "random" in output.keys():
        sets["random"] = random_like(sets[params.method], seed=params.labels["seed"])
    for method, mask in sets.items():
        mask.save(output[method])
        counts = mask_counts(mask, model_parameters=model_parameters, method=method, **params.labels)
        write_parquet(counts, output[f"{method}_counts"])
        log.info("k=%s %s/%s: %d of %d parameters", params.labels["k"], method, params.labels["control"], mask.count(), mask.numel())
