"""MathNeuro: find, delete or amplify one skill of a language model with forward passes only.

Stages, one module each: ``targets`` (which matrices), ``collect`` (activation statistics),
``select`` (top-K by |W|·stat, and the skill-specific difference), ``methods`` (the methods as
one table), ``masks`` (set algebra, random baseline, overlap, bit-packed storage), ``lape``
(entropy baseline), ``edit`` (prune/scale, restore, export), ``data`` (texts from data set specs,
local copies of hub data sets), ``models`` (loading), ``tasks`` (lm-eval task folders),
``evaluate`` (lm-eval), ``synthetic`` / ``toy`` (the embedded toy default), ``tables`` / ``plots``
(the paper's tables), ``configs`` (config files that build on others).

The names below are imported on first use, so that workflow jobs which need neither torch nor
transformers (data generation, tables) start in a fraction of a second.
"""

from importlib import import_module

_EXPORTS = {
    "STATISTICS": "collect",
    "ActivationStats": "collect",
    "collect_statistics": "collect",
    "collect_prefix_statistics": "collect",
    "scoped_hooks": "collect",
    "mlp_activations": "collect",
    "MaskEdit": "edit",
    "apply_mask": "edit",
    "export_model": "edit",
    "lape_mask": "lape",
    "ParameterMask": "masks",
    "overlap": "masks",
    "random_like": "masks",
    "SCOPES": "select",
    "identify": "select",
    "specific": "select",
    "top_k": "select",
    "METHODS": "methods",
    "Target": "targets",
    "find_targets": "targets",
    "load_texts": "data",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(f"mathneuro.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mathneuro' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
