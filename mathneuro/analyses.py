"""The study's outputs by name: its tables and the figures drawn from them.

Kept free of heavy imports, so that the workflow can name every output without loading pandas
or matplotlib; ``mathneuro.tables`` builds the tables, ``mathneuro.plots`` draws the figures.
"""

# The method, control and K labels of the rows of a fine-tuning run that needs no set (every
# parameter trained from the unedited model); their n_samples is 0, their k_fraction missing.
NO_SET = "none"
NO_SET_LABEL = "every parameter (no set)"  # how the summary and the figures name such rows
# A planted model's own sets (mathneuro.plant), pruned beside the sets the methods find: the set S
# its skill was planted in (the oracle), and random sets of S's count in every matrix. Their rows
# carry this K label and S's share as k_fraction.
PLANTED = "planted"
PLANTED_RANDOM = "planted_random"
PLANTED_LABELS = {PLANTED: "the planted set S", PLANTED_RANDOM: "random, same count per matrix as S"}

TABLES = [  # each with a summary
    "pruning", "scaling", "data_efficiency", "finetuning", "consistency", "layer_overlap", "layers", "share",
    "subskills", "subskill_overlap", "agreement", "localization",
]

FIGURES = {  # figure -> the table it is drawn from, in the report's order
    "pruning": "pruning",
    "scaling": "scaling",
    "factor_sweep": "scaling",
    "specificity": "scaling",
    "data_efficiency": "data_efficiency",
    "finetuning": "finetuning",
    "consistency": "consistency",
    "layer_overlap": "layer_overlap",
    "layers": "layers",
    "share": "share",
    "subskills": "subskills",
    "subskill_overlap": "subskill_overlap",
    "agreement": "agreement",
    "localization": "localization",
}

REPORT_CATEGORIES = {  # table -> the paper's analysis it belongs to, numbered in the report's order
    "pruning": "1. Pruning",
    "scaling": "2. Scaling",
    "data_efficiency": "3. Data efficiency",
    "consistency": "4. Consistency",
    "layer_overlap": "4. Consistency",  # the consistency overlaps, per layer and module type
    "layers": "5. Layers",
    "share": "6. Share of parameters",
    "subskills": "7. Sub-skills",
    "subskill_overlap": "7. Sub-skills",
    "agreement": "4. Consistency",  # how far SNIP's sets and MathNeuro's agree
    "finetuning": "8. Fine-tuning",
    "localization": "9. Localization",  # sets found on a planted model against the planted set
}
