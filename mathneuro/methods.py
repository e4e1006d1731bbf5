"""The methods that choose which parameters to edit, as one table.

Every place that needs to know what a method is (the workflow's selection rule and paths, the
config checks, the tables, the summary and the plots) reads it from ``METHODS``; nothing else
names a method. Adding a method is one entry here plus the library function that builds its set.

A method's entry says

* what its set is made from, ``reads``:
  ``"top_k"``, the TopK sets of the skill and of the controls its label names (skill first);
  ``"statistics"``, the model and the activation statistics of the skill and of those controls;
  ``"set"``, the set of method ``same_count_as`` made against the same controls (its pairing: a
  baseline with exactly as many entries per matrix as that set);
* how, ``make``: the library function that builds it, as ``"module:function"`` (imported when a
  set is made, so that naming methods imports no torch), called by :func:`make_set` the way
  ``reads`` says: ``make(skill_top, *control_tops)``; ``make(model, {data set: statistics},
  skill, targets=..., **settings)``; ``make(set, seed=seed)``. ``make=None``: the set *is* the
  skill's TopK set (Wanda), so no job makes it and no file holds it apart;
* ``settings``: the config section of the method's own options (LAPE's thresholds), and
  ``k_as``: the keyword that K's fraction reaches ``make`` as (LAPE's ``top_rate``); the other
  methods get K through their TopK sets;
* ``controls``: which control data sets a set is made against, which its ``control`` label
  names: ``"each"``, one set per control (MathNeuro: TopK(skill) - TopK(control)); ``"all"``, one
  set against every control at once, labelled by the controls joined with ``+`` in sorted order
  (``mmlu+race``; a new control is a new label, so finished sets never change); ``"none"``, no
  control (``NO_CONTROL``);
* ``importance``: what the TopK sets a ``"top_k"`` method reads rank weights by: ``"activations"``
  (|W| · the activation statistic, MathNeuro's forward passes) or ``"gradients"`` (Σ |W · ∂L/∂W| per
  sample, mathneuro.snip: the gradient-based importance the paper argues costs too much), each
  data set's TopK sets of that importance made by jobs of their own;
* ``label`` (figures) and ``describe`` (the summary's rows; fields ``skill``, ``control``,
  ``controls`` joined by ∪ and ``share``, K in percent); ``neurons``: the set is whole MLP neurons
  (LAPE's), so its size is also given in neurons.

The table's order is the order tables, figures and the summary show methods in.

Every method makes one set per K: a fraction of each matrix, or for LAPE the fraction of MLP
neurons it keeps, so every method draws a curve across K.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from mathneuro.masks import ParameterMask

NO_CONTROL = "none"
JOIN = "+"  # joins the controls of an "all" set's label; data set labels never hold it
TOP_K = "topk"  # method label of a data set's own TopK set (counts, consistency); control = the data set
READS = ("top_k", "statistics", "set")
# The importance a TopK set ranks weights by: |W| · the activation statistic (MathNeuro's, forward
# passes only), or SNIP's gradient-based Σ |W · ∂L/∂W| (mathneuro.snip), each with TopK sets of its own.
IMPORTANCES = ("activations", "gradients")
CONTROL_MODES = ("each", "all", "none")


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    describe: str
    controls: str  # CONTROL_MODES
    reads: str = "top_k"  # READS
    make: str | None = None  # "module:function"; None: the skill's TopK set itself
    same_count_as: str | None = None
    settings: str | None = None  # config section of the method's own options
    k_as: str | None = None  # keyword of K's fraction in `make`
    neurons: bool = False  # the set is whole MLP neurons (their output weights): sizes count them too
    importance: str = "activations"  # IMPORTANCES: whose TopK sets a "top_k" method reads

    @property
    def top_k_set(self) -> bool:
        """The set is the skill's TopK set (no job of its own)."""
        return self.make is None

    def function(self) -> Callable[..., ParameterMask]:
        module, name = self.make.split(":")
        return getattr(import_module(module), name)


def check(methods: Mapping[str, Method]) -> None:
    """ValueError naming the entry of a table that cannot work."""
    for name, m in methods.items():
        if m.name != name or m.controls not in CONTROL_MODES or m.reads not in READS:
            raise ValueError(f"method {name!r}: name, controls {CONTROL_MODES} or reads {READS} wrong")
        if (m.reads == "set") != (m.same_count_as is not None):
            raise ValueError(f"method {name!r}: a method reads a 'set' exactly when it has same_count_as")
        if m.same_count_as and methods.get(m.same_count_as, m).controls != m.controls:
            raise ValueError(f"method {name!r}: same_count_as must name another method made against the same controls")
        if m.top_k_set and (m.reads != "top_k" or m.controls != "none"):
            raise ValueError(f"method {name!r}: a TopK-set method (make=None) reads top_k and has no control")
        if m.k_as and m.reads != "statistics":
            raise ValueError(f"method {name!r}: k_as is for methods that read statistics")
        if m.importance not in IMPORTANCES or (m.importance != "activations" and m.reads != "top_k"):
            raise ValueError(f"method {name!r}: importance is one of {IMPORTANCES}, and only top_k methods rank by SNIP")


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("mathneuro", "MathNeuro", "MathNeuro ({skill} − {control})", controls="each",
               make="mathneuro.select:specific"),
        Method("random", "random, same count", "random, same count per matrix ({control})", controls="each",
               reads="set", make="mathneuro.masks:random_like", same_count_as="mathneuro"),
        Method("wanda", "Wanda (TopK of the skill)", "Wanda (top {share} on {skill})", controls="none"),
        Method("lape", "LAPE", "LAPE (top_rate {share}, {skill} against {control})", controls="all",
               reads="statistics", make="mathneuro.lape:lape_mask", settings="lape", k_as="top_rate", neurons=True),
        Method("mathneuro_all", "MathNeuro (union)", "MathNeuro-all ({skill} − {controls})", controls="all",
               make="mathneuro.select:specific"),
        Method("snip", "SNIP", "SNIP ({skill} − {control})", controls="each", make="mathneuro.select:specific",
               importance="gradients"),
        Method("snip_random", "random, same count as SNIP", "random, same count per matrix as SNIP ({control})",
               controls="each", reads="set", make="mathneuro.masks:random_like", same_count_as="snip"),
    )
}
check(METHODS)
SPECIFIC = "mathneuro"  # the skill-specific set the paper studies: the consistency analysis compares its draws
TOP_K_METHOD = next(m.name for m in METHODS.values() if m.top_k_set)  # the method whose set is the skill's TopK set


def made_methods() -> list[str]:
    """The methods whose sets a job of their own makes (all but the TopK-set one)."""
    return [m.name for m in METHODS.values() if not m.top_k_set]


def method(name: str) -> Method:
    """The method called ``name``; ValueError listing the known ones otherwise."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {sorted(METHODS)}")
    return METHODS[name]


def controls(name: str, control_sets: list[str]) -> list[str]:
    """The control labels a method's sets carry (see ``Method.controls``)."""
    mode = method(name).controls
    if mode == "each":
        return list(control_sets)
    return [JOIN.join(sorted(control_sets))] if mode == "all" else [NO_CONTROL]


def control_sets(label: str) -> list[str]:
    """The control data sets behind a control label (``mmlu+race`` -> ``["mmlu", "race"]``;
    ``NO_CONTROL`` -> none)."""
    return [] if label == NO_CONTROL else label.split(JOIN)


def sources(name: str, skill: str, control: str) -> dict[str, list[str]]:
    """What one set is made from, by kind: ``{"top_k": data sets}`` (skill first), ``{"statistics":
    data sets}`` (skill first) or ``{"set": [method]}``; the workflow turns each into files."""
    m = method(name)
    if m.reads == "set":
        return {"set": [m.same_count_as]}
    return {m.reads: [skill, *control_sets(control)]}


def set_name(method: str, control: str) -> str:
    """How figures and the summary name a set by its method and control: 'MathNeuro vs reading',
    'Wanda (TopK of the skill)', or a data set's own TopK set: 'TopK(reading)'."""
    if method == TOP_K:
        return f"TopK({control})"
    from mathneuro.analyses import PLANTED_LABELS

    label = METHODS[method].label if method in METHODS else PLANTED_LABELS.get(method, method)
    return label + ("" if control == NO_CONTROL else f" vs {control}")


def describe(name: str, *, skill: str, control: str, k_fraction: float) -> str:
    """How the summary names one set: 'MathNeuro (math − reading)', 'Wanda (top 5% on math)'..."""
    if name not in METHODS:
        return f"{name} ({control})"
    return METHODS[name].describe.format(skill=skill, control=control, controls=" ∪ ".join(control_sets(control)),
                                         share=f"{100 * k_fraction:g}%")


def make_set(name: str, files: Mapping[str, Sequence[str]], *, skill: str, seed: int, k_fraction: float,
             settings: Mapping[str, Any] | None = None, model: Mapping[str, Any] | None = None,
             targets: Mapping[str, Any] | None = None) -> ParameterMask:
    """Build one set of method ``name`` from its input files (``sources``' kinds as keys): TopK
    sets, a same-count reference set, or statistics with the model (``model``: load_weights'
    arguments; ``targets``: find_targets'). The set's provenance records ``model_parameters``."""
    from mathneuro.masks import ParameterMask

    m = method(name)
    make = m.function()
    if m.reads == "top_k":
        inputs = [ParameterMask.load(path) for path in files["top_k"]]
        mask, parameters = make(*inputs), inputs[0].provenance["model_parameters"]
    elif m.reads == "set":
        reference = ParameterMask.load(files["set"][0])
        mask, parameters = make(reference, seed=seed), reference.provenance["model_parameters"]
    else:
        from mathneuro.collect import ActivationStats
        from mathneuro.models import load_weights
        from mathneuro.targets import find_targets

        loaded, _ = load_weights(**model)
        stats = {s.metadata["dataset"]: s for s in map(ActivationStats.load, files["statistics"])}
        options = {**(settings or {}), **({m.k_as: k_fraction} if m.k_as else {})}
        mask = make(loaded, stats, skill, targets=find_targets(loaded, **(targets or {})), **options)
        parameters = sum(p.numel() for p in loaded.parameters())
    mask.provenance["model_parameters"] = int(parameters)
    return mask
