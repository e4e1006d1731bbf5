"""A skill planted in known parameters: the ground truth that localization methods are scored on.

Every localization result is otherwise judged indirectly (prune the found set, see the skill go),
which cannot tell "found where the skill lives" from "found *some* parameters whose loss hurts
it". Planting gives a truth (after INJ, Chang et al., NAACL 2024, there for memorized facts):

1. a model that lacks a skill (the toy trained on everything else);
2. a set S of its block matrices' entries (:func:`truth_set`): ``entries``, a random share of each
   matrix, or ``neurons``, a random share of each MLP's neurons, whole (the rows of the matrices
   that write a neuron, gate and up, and the column of the one that reads it, down);
3. the skill trained into S alone (:func:`plant`: mathneuro.finetune's set-only training, every
   entry outside S bit-identical to the base's).

The skill's change then lives in S by construction: putting S's pre-plant values back
(:func:`restore`) gives the base model bit for bit. mathneuro.tables.localization scores a found
set against S: precision (how much of the found set lies in S), recall (how much of S it found)
and Jaccard, per module type and over all matrices, with ``chance``, the precision a set drawn at
random would have there (S's share of those entries).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn

from mathneuro.masks import ParameterMask
from mathneuro.targets import Target, find_targets

SHAPES = ("entries", "neurons")
_MLP = re.compile(r"^(.*\.mlp)\.")
_STREAM = 0x706C616E  # "plan": the planted sets' streams


def truth_set(model: nn.Module, shape: str, share: float, seed: int,
              targets: Sequence[Target] | None = None) -> ParameterMask:
    """The set S a skill is planted in, over the target matrices (default: every matrix inside the
    blocks, as the methods score them): ``entries``, ``round(share · size)`` entries of each matrix
    drawn uniformly (a stream per matrix, apart from mathneuro.masks.random_like's); ``neurons``,
    ``round(share · d_mlp)`` neurons of each MLP block drawn uniformly, each whole (its row in
    every matrix that writes it, its column in the one that reads it). Other matrices (attention
    under ``neurons``) hold no entry of S."""
    if shape not in SHAPES:
        raise ValueError(f"a planted set's shape is one of {SHAPES}, not {shape!r}")
    if not 0 < share < 1:
        raise ValueError(f"a planted set's share must lie in (0, 1), got {share}")
    targets = list(targets) if targets is not None else find_targets(model)
    if any(t.expert is not None or t.routed for t in targets):
        raise ValueError("planting in experts' matrices is not implemented: the routed tokens of a "
                         "mixture of experts decide what an expert's entries learn")
    if shape == "entries":
        masks = {}
        for t in targets:
            numel = t.weight.numel()
            flat = np.zeros(numel, dtype=bool)
            flat[_rng(seed, t.param_name).choice(numel, size=round(share * numel), replace=False)] = True
            masks[t.param_name] = torch.from_numpy(flat).reshape(t.weight.shape)
        return ParameterMask(masks, {"op": "planted", "shape": shape, "share": share, "seed": seed})
    return _neurons(model, targets, share, seed)


def _rng(seed: int, name: str) -> np.random.Generator:
    """A matrix's own stream, apart from mathneuro.masks.random_like's under any seed (the random
    baselines of S must not draw S again)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode()), _STREAM])


def _neurons(model: nn.Module, targets: Sequence[Target], share: float, seed: int) -> ParameterMask:
    hidden = int(model.config.hidden_size)
    masks = {t.param_name: torch.zeros(t.weight.shape, dtype=torch.bool) for t in targets}
    blocks: dict[str, list[Target]] = {}
    for t in targets:
        match = _MLP.match(t.name)
        if match:
            blocks.setdefault(match.group(1), []).append(t)
    if not blocks:
        raise ValueError("no MLP block (a module named `mlp`) among the target matrices: neurons cannot be planted")
    for block, members in sorted(blocks.items()):
        d_mlp = {d for t in members for d in _dims(t)} - {hidden}
        if len(d_mlp) != 1:
            raise ValueError(f"{block}: cannot tell its neurons' dimension from the matrices' shapes "
                             f"{[tuple(t.weight.shape) for t in members]} and hidden size {hidden}")
        (d_mlp,) = d_mlp
        rng = _rng(seed, block)
        chosen = torch.from_numpy(np.sort(rng.choice(d_mlp, size=round(share * d_mlp), replace=False)))
        for t in members:
            in_features, out_features = _dims(t)
            reads = in_features == d_mlp  # the neurons are this matrix's inputs (down) or outputs
            axis = (0 if reads else 1) if t.transposed else (1 if reads else 0)
            masks[t.param_name].index_fill_(axis, chosen, True)
    return ParameterMask(masks, {"op": "planted", "shape": "neurons", "share": share, "seed": seed})


def _dims(t: Target) -> tuple[int, int]:
    """(in_features, out_features) of a target matrix."""
    rows, columns = t.weight.shape
    return (rows, columns) if t.transposed else (columns, rows)


def plant(model: nn.Module, tokenizer, texts: Sequence[str], truth: ParameterMask, **training) -> dict[str, torch.Tensor]:
    """Train the skill of ``texts`` into the entries of ``truth`` alone (mathneuro.finetune's
    set-only training, keywords of mathneuro.training.train); the model keeps the planted
    values, and every other entry its own, bit for bit. Returns the planted values (the set's
    entries, in the mask's order)."""
    from mathneuro.finetune import finetune

    return finetune(model, tokenizer, texts, truth, **training)


def restore(model: nn.Module, base: Mapping[str, torch.Tensor], truth: ParameterMask) -> None:
    """Put the base model's values (``base``: its state, parameter name -> tensor) back into the
    entries of ``truth``: the planted skill's whole change undone."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, selected in truth.items():
            param = params[name]
            selected = selected.to(param.device)
            param[selected] = base[name].to(param.device, param.dtype)[selected]
