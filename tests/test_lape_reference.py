"""LAPE (mathneuro.lape) against a reference written here in numpy from Tang et al.'s definition
("Language-Specific Neurons", ACL 2024, and their identify.py / activation.py):

* a neuron's activation on a token is its activation function's output (SiLU(gate) in a gated
  MLP, GELU(fc) in GPT-2's), and p(l, j) is the share of data set l's tokens on which it is > 0;
* H_j is the entropy of p(., j) normalised over the data sets (0 log 0 = 0; a neuron that never
  fires has all-zero p and entropy 0);
* a neuron none of whose p exceeds the ``filter_rate`` quantile of all p is dismissed; of the
  rest, the ``top_rate`` share of *all* neurons with the lowest entropy is kept;
* a kept neuron is specific to data set l when p(l, j) exceeds the ``activation_bar_ratio``
  quantile of all p; the quantile of rate r is the k-th smallest of all p, k = round(r · count)
  (torch.kthvalue as identify.py calls it).

Tang et al.'s top-k leaves the order of equal entropies open: where the last kept places fall in
a tie, the reference gives the neurons specific under every choice and under some choice, and
lape.py must lie between them.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from conftest import TEXTS, tiny_gpt2, tiny_llama

import mathneuro
from mathneuro import ActivationStats
from mathneuro.collect import mlp_activations
from mathneuro.lape import specific_neurons


def reference_specific(p: np.ndarray, top_rate: float, filter_rate: float, bar_ratio: float):
    """(for every tie-break, for some tie-break, whether a tie decides) from probabilities p
    (layers, neurons, sets), by the definition above."""
    layers, neurons, _ = p.shape
    total = p.sum(-1, keepdims=True)
    q = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    log_q = np.log(q, out=np.zeros_like(q), where=q > 0)
    entropy = -(q * log_q).sum(-1)

    ascending = np.sort(p, axis=None)

    def quantile(rate: float) -> float:
        k = round(rate * ascending.size)
        assert k >= 1, "the definition needs at least one value below the quantile"
        return ascending[k - 1]

    strong = (p > quantile(filter_rate)).any(-1)  # the others are dismissed
    n_keep = round(top_rate * layers * neurons)
    ranked = np.sort(entropy[strong])
    if n_keep >= ranked.size:
        surely, maybe = strong, np.zeros_like(strong)
    elif n_keep == 0:
        surely, maybe = np.zeros_like(strong), np.zeros_like(strong)
    else:
        boundary = ranked[n_keep - 1]
        surely, maybe = strong & (entropy < boundary), strong & (entropy == boundary)
        if surely.sum() + maybe.sum() == n_keep:  # the whole tie fits: nothing left open
            surely, maybe = surely | maybe, np.zeros_like(maybe)
    active = p > quantile(bar_ratio)
    return surely[..., None] & active, (surely | maybe)[..., None] & active, bool(maybe.any())


def random_counts(rng: np.random.Generator, shape: tuple[int, int], n_tokens: int, zeros: bool) -> np.ndarray:
    """Tokens on which each neuron fired. Without zeros: distinct entropies (no ties). With zeros:
    neurons silent on some data sets (entropy 0 where one set is left, ties) and never firing."""
    counts = rng.integers(1, n_tokens + 1, size=shape)
    if zeros:
        counts[rng.random(shape) < 0.3] = 0
    return counts


RATES = [  # (top_rate, filter_rate, activation_bar_ratio)
    (0.01, 0.95, 0.95),  # Tang et al.'s
    (0.05, 0.95, 0.95),  # identify.py as published (top_rate 0.05)
    (0.05, 0.9, 0.8),
    (0.1, 0.5, 0.95),  # bar above filter
    (0.3, 0.95, 0.5),  # more places than undismissed neurons; bar below filter
]
TOKENS = (5003, 7919, 3001)  # per data set: p is counts / the set's own token count


def probabilities(seed: int, n_sets: int, zeros: bool) -> np.ndarray:
    """p (3 layers, 200 neurons, n_sets): counts over each set's own token count."""
    rng = np.random.default_rng([seed, n_sets, zeros])
    counts = [random_counts(rng, (3, 200), n, zeros) for n in TOKENS[:n_sets]]
    if zeros:
        counts[0][0, :5] = 0  # neurons that fire on one set only (if any) and never
        for c in counts[1:]:
            c[0, :10] = 0
    return np.stack([c / n for c, n in zip(counts, TOKENS)], axis=-1)


CASES = list(itertools.product([0, 1, 2], RATES, [2, 3], [False, True]))
CASE_IDS = ["seed{}-top{}-filter{}-bar{}-{}sets-{}".format(seed, *rates, n, "zeros" if z else "distinct")
            for seed, rates, n, z in CASES]


@pytest.mark.parametrize(("seed", "rates", "n_sets", "zeros"), CASES, ids=CASE_IDS)
def test_specific_neurons_equal_the_reference(seed, rates, n_sets, zeros):
    p = probabilities(seed, n_sets, zeros)
    surely, possibly, tie = reference_specific(p, *rates)
    top_rate, filter_rate, bar_ratio = rates

    got = specific_neurons(torch.from_numpy(p), top_rate=top_rate, filter_rate=filter_rate,
                           activation_bar_ratio=bar_ratio).numpy()
    assert got.shape == p.shape
    if not tie:
        np.testing.assert_array_equal(got, surely)
    else:
        assert not (surely & ~got).any(), "a neuron specific under every tie-break is missing"
        assert not (got & ~possibly).any(), "a neuron specific under no tie-break is selected"
    assert not tie or zeros  # distinct entropies: one answer, compared exactly
    assert got.any()  # every case selects something: the comparison is never empty


def test_ties_at_the_last_place_occur_in_the_table():
    """The tie branch above is exercised: some cases with zeros have equal entropies at the boundary."""
    ties = [reference_specific(probabilities(seed, n, z), *rates)[2] for seed, rates, n, z in CASES]
    assert any(ties) and not all(ties)


# The mask: the columns (rows for GPT-2's Conv1D) of the weight that reads each neuron -----------

# model -> (its MLP activation module, the weight reading the neurons, the axis indexing them)
READERS = {
    "llama": (tiny_llama, r"model\.layers\.(\d+)\.mlp\.act_fn", "model.layers.{}.mlp.down_proj.weight", 1),
    "gpt2": (tiny_gpt2, r"transformer\.h\.(\d+)\.mlp\.act", "transformer.h.{}.mlp.c_proj.weight", 0),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("rates", [(0.1, 0.9, 0.5), (0.2, 0.5, 0.8), (0.05, 0.95, 0.95)],
                         ids=lambda r: "top{}-filter{}-bar{}".format(*r))
@pytest.mark.parametrize("n_sets", [2, 3])
@pytest.mark.parametrize("arch", sorted(READERS))
def test_the_mask_holds_exactly_the_output_weights_of_the_reference_neurons(arch, n_sets, rates, seed, tokenizer):
    build, act_pattern, reader, axis = READERS[arch]
    model = build(len(tokenizer))
    acts = mlp_activations(model)
    layers = {name: int(re.fullmatch(act_pattern, name).group(1)) for name in acts}
    assert sorted(layers.values()) == list(range(len(acts))) >= [0, 1]
    d_mlp = model.get_parameter(reader.format(0)).shape[axis]

    rng = np.random.default_rng([seed, n_sets])
    sets = ["math", "reading", "facts"][:n_sets]
    counts = {s: random_counts(rng, (len(layers), d_mlp), n, zeros=False) for s, n in zip(sets, TOKENS)}
    stats = {s: ActivationStats(stats={}, statistic="norm", n_samples=1, n_tokens=n, n_truncated=0,
                                lape_counts={name: torch.from_numpy(counts[s][i]) for name, i in layers.items()})
             for s, n in zip(sets, TOKENS)}
    p = np.stack([counts[s] / n for s, n in zip(sets, TOKENS)], axis=-1)
    surely, _, tie = reference_specific(p, *rates)
    assert not tie and surely.any()

    top_rate, filter_rate, bar_ratio = rates
    for index, target in enumerate(sets):
        mask = mathneuro.lape_mask(model, stats, target, top_rate=top_rate, filter_rate=filter_rate,
                                   activation_bar_ratio=bar_ratio)
        assert mask.provenance["sets"] == sets and mask.provenance["target"] == target
        expected = {}
        for layer in range(len(layers)):
            weight = model.get_parameter(reader.format(layer))
            columns = torch.zeros(weight.shape, dtype=torch.bool)
            columns.index_fill_(axis, torch.from_numpy(np.flatnonzero(surely[layer, :, index])), True)
            expected[reader.format(layer)] = columns
        assert set(expected) <= set(mask)
        for name in mask:
            want = expected.get(name, torch.zeros(model.get_parameter(name).shape, dtype=torch.bool))
            assert torch.equal(mask[name], want), f"{arch} {target} {name}"
        assert mask.count() == int(surely[..., index].sum()) * model.config.hidden_size


# What is counted: the activation function's output > 0, on real tokens only --------------------


def reference_counts(model, tokenizer, texts, arch: str) -> dict[str, torch.Tensor]:
    """Per MLP block, the tokens on which act(gate(x)) (Llama) or act(c_fc(x)) (GPT-2) is > 0,
    each text alone (no padding), from the block's input."""
    blocks = model.model.layers if arch == "llama" else model.transformer.h
    prefix = "model.layers.{}.mlp.act_fn" if arch == "llama" else "transformer.h.{}.mlp.act"
    totals = {prefix.format(i): 0 for i in range(len(blocks))}

    def counter(i):
        def hook(mlp, args):
            x = args[0]
            pre = mlp.gate_proj(x) if arch == "llama" else mlp.c_fc(x)
            act = mlp.act_fn if arch == "llama" else mlp.act
            totals[prefix.format(i)] += (act(pre) > 0).reshape(-1, pre.shape[-1]).sum(0)
        return hook

    handles = [block.mlp.register_forward_pre_hook(counter(i)) for i, block in enumerate(blocks)]
    try:
        with torch.no_grad():
            for text in texts:
                model(tokenizer(text, return_tensors="pt")["input_ids"])
    finally:
        for h in handles:
            h.remove()
    return totals


@pytest.mark.parametrize("arch", sorted(READERS))
def test_lape_counts_the_tokens_on_which_the_activation_function_fires(arch, tokenizer):
    model = READERS[arch][0](len(tokenizer))
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, lape=True, batch_size=5)  # padded batches
    reference = reference_counts(model, tokenizer, TEXTS, arch)
    assert stats.n_tokens == sum(len(tokenizer(t)["input_ids"]) for t in TEXTS)
    assert set(stats.lape_counts) == set(reference)
    for name, counts in reference.items():
        assert torch.equal(stats.lape_counts[name], counts), name
        assert 0 < counts.sum() < stats.n_tokens * counts.numel()  # neither never nor always
