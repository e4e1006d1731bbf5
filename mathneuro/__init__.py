"""MathNeuro: find, delete or amplify one skill of a language model with forward passes only.

Stages, one module each: ``targets`` (which matrices), ``collect`` (activation statistics),
``select`` (top-K by |W|·stat), ``masks`` (set algebra, random baseline, overlap, bit-packed
storage), ``lape`` (entropy baseline), ``edit`` (prune/scale, restore, export), ``data``
(texts from data set specs), ``synthetic`` / ``toy`` / ``evaluate`` (the embedded toy default and
lm-eval), ``tables`` (the paper's tables).
"""

from mathneuro.collect import STATISTICS, ActivationStats, collect_statistics, scoped_hooks
from mathneuro.edit import MaskEdit, apply_mask, export_model
from mathneuro.lape import lape_mask
from mathneuro.masks import ParameterMask, overlap, random_like
from mathneuro.select import SCOPES, top_k
from mathneuro.targets import Target, find_targets

__all__ = [
    "STATISTICS",
    "SCOPES",
    "ActivationStats",
    "MaskEdit",
    "ParameterMask",
    "Target",
    "apply_mask",
    "collect_statistics",
    "export_model",
    "find_targets",
    "lape_mask",
    "load_texts",
    "overlap",
    "random_like",
    "scoped_hooks",
    "top_k",
]


def __getattr__(name: str):
    # data.py pulls in `datasets`; import it only when asked for.
    if name == "load_texts":
        from mathneuro.data import load_texts

        return load_texts
    raise AttributeError(f"module 'mathneuro' has no attribute {name!r}")
