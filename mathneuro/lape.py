"""LAPE baseline: skill-specific MLP neurons by activation-probability entropy (Tang et al. 2024).

For each MLP neuron and data set, the activation probability p = P(act(x) > 0) over tokens is
counted during collection (``collect_statistics(..., lape=True)``). As in the reference
implementation (``identify.py`` of "Language-Specific Neurons", ACL 2024):

1. normalise p over data sets and take its entropy;
2. drop neurons whose probability exceeds the ``filter_rate`` quantile of all probabilities
   for no data set;
3. keep the ``top_rate`` fraction of neurons with the lowest entropy (dropped neurons never:
   the authors' code gives them infinite entropy, and its top-k can still pick them when fewer
   neurons survive step 2 than ``top_rate`` asks for; with the defaults the two agree);
4. a kept neuron is specific to data set d when its p_d exceeds the ``activation_bar_ratio``
   quantile of all probabilities.

Neurons specific to the target data set become a ``ParameterMask`` over the weights that read
them: the down/fc2 column of each neuron, its output. Zeroing it removes the neuron's contribution
(as zeroing its gate and up rows would, and unlike zeroing an fc1 row, whose bias stays), and
multiplying it by a factor scales the neuron's output by exactly that factor, as the authors'
LAPE.py does by multiplying the selected neurons' activations in a patched MLP forward
(docs/method.md).

The entropy is taken over every data set in ``stats`` at once (Tang et al. and the authors' code
pass all, as does the workflow); ``top_rate`` is the workflow's K. Models that route tokens to
experts get a clear error: LAPE on experts' neurons is not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from mathneuro.collect import ActivationStats
from mathneuro.masks import ParameterMask
from mathneuro.targets import Target, find_targets


def activation_probabilities(stats: Sequence[ActivationStats]) -> tuple[list[str], torch.Tensor]:
    """Stack per-data-set probabilities: names of MLP activations and (layers, d_mlp, sets)."""
    if any(not s.lape_counts for s in stats):
        raise ValueError("LAPE needs statistics collected with lape=True for every data set")
    names = sorted(stats[0].lape_counts)
    probs = [torch.stack([s.lape_counts[n].double() / s.n_tokens for n in names]) for s in stats]
    return names, torch.stack(probs, dim=-1)  # (layers, d_mlp, sets)


def specific_neurons(
    probs: torch.Tensor,
    *,
    top_rate: float = 0.01,
    filter_rate: float = 0.95,
    activation_bar_ratio: float = 0.95,
) -> torch.Tensor:
    """Bool (layers, d_mlp, sets): neuron is specific to data set, by the LAPE rules above."""
    normed = probs / probs.sum(-1, keepdim=True)
    normed = torch.nan_to_num(normed, nan=0.0)
    log = torch.where(normed > 0, normed.log(), torch.zeros_like(normed))
    entropy = -(normed * log).sum(-1)  # (layers, d_mlp)
    flat = probs.flatten()
    top_prob = flat.kthvalue(max(1, round(len(flat) * filter_rate))).values
    entropy[(probs > top_prob).sum(-1) == 0] = torch.inf  # never strongly active: dismissed
    n_keep = round(entropy.numel() * top_rate)
    keep = torch.zeros(entropy.numel(), dtype=torch.bool)
    order = torch.argsort(entropy.flatten(), stable=True)[:n_keep]  # lowest entropy first
    keep[order[torch.isfinite(entropy.flatten()[order])]] = True
    bar = flat.kthvalue(max(1, round(len(flat) * activation_bar_ratio))).values
    return keep.view(entropy.shape)[..., None] & (probs > bar)


def _output_weights(targets: Sequence[Target], mlp: str, d_mlp: int) -> tuple[Target, int]:
    """The target in block ``mlp`` that reads its ``d_mlp`` neurons (down_proj, fc2, c_proj), and
    the weight axis that indexes them (Linear: columns; GPT-2's Conv1D: rows)."""
    readers = []
    for t in targets:
        if t.name.startswith(mlp + ".") and t.in_features == d_mlp:
            out_features = t.weight.shape[1] if t.transposed else t.weight.shape[0]
            if out_features == d_mlp:
                raise ValueError(f"cannot tell whether {t.name} reads or writes the MLP neurons (square)")
            readers.append((t, 0 if t.transposed else 1))
    if len(readers) != 1:
        raise ValueError(f"expected one target weight reading the neurons of {mlp!r}, found "
                         f"{[t.name for t, _ in readers]}")
    return readers[0]


def lape_mask(
    model: nn.Module,
    stats: Mapping[str, ActivationStats],
    target: str,
    *,
    top_rate: float = 0.01,
    filter_rate: float = 0.95,
    activation_bar_ratio: float = 0.95,
    targets: Sequence[Target] | None = None,
) -> ParameterMask:
    """Mask over the output weights of the MLP neurons LAPE finds specific to data set ``target``,
    the entropy taken over every data set in ``stats``."""
    targets = list(targets) if targets is not None else find_targets(model)
    experts = sorted({t.param_name for t in targets if t.routed})
    if experts:
        raise ValueError(f"LAPE counts the neurons of dense MLP blocks; {type(model).__name__} routes tokens to experts "
                         f"({experts[0]}, ...), whose neurons mathneuro does not count: drop lape from methods")
    if target not in stats:
        raise ValueError(f"LAPE target data set {target!r} is not among {sorted(stats)}")
    sets = list(stats)
    names, probs = activation_probabilities([stats[s] for s in sets])
    specific = specific_neurons(
        probs, top_rate=top_rate, filter_rate=filter_rate, activation_bar_ratio=activation_bar_ratio
    )[..., sets.index(target)]  # (layers, d_mlp)
    masks = {t.param_name: torch.zeros(t.weight.shape, dtype=torch.bool) for t in targets}
    for act_name, neurons in zip(names, specific):
        t, axis = _output_weights(targets, act_name.rsplit(".", 1)[0], neurons.numel())
        masks[t.param_name].index_fill_(axis, neurons.nonzero().squeeze(1), True)
    provenance = {"method": "lape", "target": target, "sets": sets, "top_rate": top_rate,
                  "filter_rate": filter_rate, "activation_bar_ratio": activation_bar_ratio}
    return ParameterMask(masks, provenance)
