"""Top-K selection of important weights (S = |W| · stat, largest K fraction) and the method's
identification step: the skill's top-K set minus each control's (``specific``, ``identify``).

Scopes:

* ``"matrix"`` (the paper's): in each weight matrix, the ``int(numel * fraction)`` largest scores
  (each expert's matrix of a fused expert weight is a matrix of its own).
* ``"row"`` (Wanda's): in each output row, the ``int(in_features * fraction)`` largest scores
  (a depthwise convolution's row is one channel's taps: ``int(kernel * fraction)`` of them).
* ``"global"``: the ``int(total * fraction)`` largest scores over all target matrices.

Ties are broken deterministically: among equal scores at the threshold, lower flat indices (and,
for ``"global"``, earlier matrices) win. Scores are formed one matrix at a time and dropped before
the next, so memory never holds more than one matrix's scores; ``"global"`` finds its exact
threshold with two histogram passes over the float32 bit patterns before a third pass selects.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator, Mapping, Sequence

import torch
from torch import nn

from mathneuro.collect import ActivationStats
from mathneuro.masks import ParameterMask
from mathneuro.targets import Target, expert_view, find_targets, importance

SCOPES = ("matrix", "row", "global")
SCORES = "snip_scores"  # the statistic of importance scores computed whole (mathneuro.snip.STATISTIC)


def check_fraction(fraction: float) -> None:
    if not 0 < fraction <= 1:
        raise ValueError(f"top-K fraction must be in (0, 1], got {fraction!r}")


def _scores(targets: Sequence[Target], stats: ActivationStats) -> Iterator[tuple[Target, torch.Tensor]]:
    """(target, importance) one matrix at a time, each weight read once, after checking that the
    statistics cover every target. Statistics that are scores already (SNIP's, one full matrix
    per target, mathneuro.snip) are the importance as they are."""
    missing = [t.name for t in targets if t.name not in stats.stats]
    if missing:
        raise ValueError(f"activation statistics have no entry for layer(s) {missing[:3]}: collected for another model?")
    if stats.statistic == SCORES:
        for t in targets:
            yield t, stats.stats[t.name].to(torch.float32)
        return
    for t in targets:
        weight, stat = t.weight, stats.stats[t.name]
        in_features = weight.shape[0] if t.inputs_first else weight.shape[1]
        if stat.shape != (in_features,):
            raise ValueError(f"statistics for {t.name!r} have shape {tuple(stat.shape)}, layer has {in_features} inputs")
        yield t, importance(weight, stat, transposed=t.inputs_first)


def top_k_flat(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Bool mask of the ``k`` largest entries of a 1-D tensor; ties go to lower indices."""
    n = scores.numel()
    if k <= 0:
        return torch.zeros(n, dtype=torch.bool, device=scores.device)
    if k >= n:
        return torch.ones(n, dtype=torch.bool, device=scores.device)
    threshold = torch.kthvalue(scores, n - k + 1).values
    mask = scores > threshold
    ties = (scores == threshold).nonzero().squeeze(1)[: k - int(mask.count_nonzero())]
    mask[ties] = True
    return mask


def _top_k_rows(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Per row of a 2-D tensor, the ``k`` largest entries; ties go to lower column indices."""
    n = scores.shape[1]
    if k <= 0:
        return torch.zeros_like(scores, dtype=torch.bool)
    if k >= n:
        return torch.ones_like(scores, dtype=torch.bool)
    threshold = torch.kthvalue(scores, n - k + 1, dim=1, keepdim=True).values  # (rows, 1)
    mask = scores > threshold
    ties = scores == threshold
    room = k - mask.sum(1, keepdim=True)  # (rows, 1)
    return mask | (ties & (ties.cumsum(1) <= room))


def _assemble(chosen: Iterator[tuple[Target, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Parameter masks from each target's matrix mask: an expert's fills its slice of the fused
    weight's mask."""
    masks: dict[str, torch.Tensor] = {}
    for t, mask in chosen:
        if t.expert is None:
            masks[t.param_name] = mask.cpu()
            continue
        if t.param_name not in masks:
            masks[t.param_name] = torch.zeros(t.parameter.shape, dtype=torch.bool)
        expert_view(masks[t.param_name], t.experts)[t.expert] = mask.cpu()
    return masks


def _matrix_scope(targets, stats, fraction) -> dict[str, torch.Tensor]:
    return _assemble(
        (t, top_k_flat(s.flatten(), int(s.numel() * fraction)).view(s.shape)) for t, s in _scores(targets, stats)
    )


def _row_scope(targets, stats, fraction) -> dict[str, torch.Tensor]:
    def rows_of(t, s):
        rows = s.T if t.transposed else s.reshape(s.shape[0], -1)  # one row per output unit: (out, in), (channels, kernel)
        chosen = _top_k_rows(rows, int(rows.shape[1] * fraction))
        return chosen.T if t.transposed else chosen.view(s.shape)

    return _assemble((t, rows_of(t, s)) for t, s in _scores(targets, stats))


def _bits(scores: torch.Tensor) -> torch.Tensor:
    """Non-negative float32 -> int32 with the same order (IEEE 754 bit patterns)."""
    return scores.flatten().view(torch.int32)


def _global_threshold(targets, stats, k: int) -> tuple[int, int]:
    """Exact k-th largest score (as float32 bits) over all matrices and how many ties to take."""
    high = torch.zeros(1 << 15, dtype=torch.int64)  # histogram of the top 16 bits (sign is 0)
    for _, s in _scores(targets, stats):
        high += torch.bincount((_bits(s) >> 16).cpu(), minlength=1 << 15)
    above = high.flip(0).cumsum(0).flip(0)  # above[b] = count with top bits >= b
    top = int((above >= k).nonzero().max())  # highest bin holding the k-th largest
    need = k - (int(above[top + 1]) if top + 1 < len(above) else 0)
    low = torch.zeros(1 << 16, dtype=torch.int64)
    for _, s in _scores(targets, stats):
        bits = _bits(s)
        low += torch.bincount((bits[(bits >> 16) == top] & 0xFFFF).cpu(), minlength=1 << 16)
    above_low = low.flip(0).cumsum(0).flip(0)
    bottom = int((above_low >= need).nonzero().max())
    ties = need - (int(above_low[bottom + 1]) if bottom + 1 < len(above_low) else 0)
    return (top << 16) | bottom, ties


def _global_scope(targets, stats, fraction) -> dict[str, torch.Tensor]:
    total = sum(t.weight.numel() for t in targets)
    k = int(total * fraction)
    if k == 0:
        return _assemble((t, torch.zeros(t.weight.shape, dtype=torch.bool)) for t in targets)
    threshold, ties_left = _global_threshold(targets, stats, k)

    def chosen():
        nonlocal ties_left
        for t, s in _scores(targets, stats):
            bits = _bits(s)
            mask = bits > threshold
            ties = (bits == threshold).nonzero().squeeze(1)[:ties_left]
            mask[ties] = True
            ties_left -= len(ties)
            yield t, mask.view(s.shape)

    return _assemble(chosen())


_SCOPE_FUNCTIONS = {"matrix": _matrix_scope, "row": _row_scope, "global": _global_scope}


def top_k(
    model: nn.Module | None,
    stats: ActivationStats,
    fraction: float,
    *,
    scope: str = "matrix",
    targets: Sequence[Target] | None = None,
) -> ParameterMask:
    """The top-``fraction`` weights of every target by importance |W| · stat.

    ``targets`` default to ``find_targets(model)``; with ``targets`` given, ``model`` is unused
    (None is fine, e.g. for ``targets.stored_targets`` read from a checkpoint).
    """
    check_fraction(fraction)
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; choose one of {SCOPES}")
    targets = list(targets) if targets is not None else find_targets(model)
    with torch.no_grad():
        masks = _SCOPE_FUNCTIONS[scope](targets, stats, fraction)
    provenance = {
        "method": "top_k",
        "fraction": fraction,
        "scope": scope,
        "statistic": stats.statistic,
        "n_samples": stats.n_samples,
        "stats": stats.metadata,
    }
    return ParameterMask(masks, provenance, {t.param_name: t.experts for t in targets if t.experts is not None})


def specific(skill_top: ParameterMask, *control_tops: ParameterMask) -> ParameterMask:
    """MathNeuro's step 3: the entries in the skill's top-K set that are in no control's
    (one control, as in the paper, or several: TopK(skill) - the union of their TopK sets)."""
    if not control_tops:
        raise ValueError("specific needs at least one control's top-K set")
    chosen = skill_top - functools.reduce(operator.or_, control_tops)
    controls = [c.provenance for c in control_tops]
    chosen.provenance = {"method": "mathneuro", "skill": skill_top.provenance,
                         "control": controls[0] if len(controls) == 1 else controls}
    return chosen


def identify(
    model: nn.Module,
    stats: Mapping[str, ActivationStats],
    skill: str,
    fraction: float,
    *,
    scope: str = "matrix",
    targets: Sequence[Target] | None = None,
) -> tuple[dict[str, ParameterMask], dict[str, ParameterMask]]:
    """MathNeuro's steps 2-3 at one K: the top-``fraction`` set of every data set in ``stats``
    (the skill's is Wanda's set), and for every other data set (a control) the skill-specific set
    ``specific(top[skill], top[control])``. Returns ``(top, specific_sets)`` keyed by data set.
    """
    if skill not in stats or len(stats) < 2:
        raise ValueError(f"identify needs statistics of the skill {skill!r} and at least one control, got {sorted(stats)}")
    targets = list(targets) if targets is not None else find_targets(model)
    top = {name: top_k(model, s, fraction, scope=scope, targets=targets) for name, s in stats.items()}
    return top, {name: specific(top[skill], top[name]) for name in stats if name != skill}
