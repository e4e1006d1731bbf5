"""The study's outputs by name: its tables and the figures drawn from them.

Kept free of heavy imports, so that the workflow can name every output without loading pandas
or matplotlib; ``mathneuro.tables`` builds the tables, ``mathneuro.plots`` draws the figures.
"""

TABLES = ["pruning", "scaling", "data_efficiency", "consistency", "layers", "share"]  # each with a summary

FIGURES = {  # figure -> the table it is drawn from, in the report's order
    "pruning": "pruning",
    "scaling": "scaling",
    "factor_sweep": "scaling",
    "specificity": "scaling",
    "data_efficiency": "data_efficiency",
    "consistency": "consistency",
    "layers": "layers",
    "share": "share",
}

REPORT_CATEGORIES = {  # table -> the paper's analysis it belongs to, numbered in the report's order
    "pruning": "1. Pruning",
    "scaling": "2. Scaling",
    "data_efficiency": "3. Data efficiency",
    "consistency": "4. Consistency",
    "layers": "5. Layers",
    "share": "6. Share of parameters",
}
