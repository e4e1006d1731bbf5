"""MathNeuro as a cached Snakemake workflow: activations -> top-K -> masks -> edits -> lm-eval -> tables.

Default: the embedded toy (config.yaml). Other studies: `--configfile <file>`, which replaces the
default; a file's `base:` names the files it builds on (configs/models/*.yaml build on
configs/paper.yaml). See README.md.
"""

import os

from snakemake.utils import min_version

min_version("9.0")


# The default sits beside this file, whatever --directory says.
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/model.smk"
include: "rules/collect.smk"
include: "rules/select.smk"
include: "rules/finetune.smk"
include: "rules/evaluate.smk"
include: "rules/aggregate.smk"
include: "rules/prefetch.smk"


localrules:
    all,


rule all:
    default_target: True
    input:
        final_outputs(),
