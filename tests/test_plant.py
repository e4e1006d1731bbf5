"""Planting a skill in known parameters (mathneuro.plant): the set S of each shape, the skill's whole
change inside S (restoring S gives the base bit for bit), and precision, recall and Jaccard of a
found set against S (mathneuro.tables.localization), checked on hand-built masks."""

from __future__ import annotations

import copy
import math

import pandas as pd
import pytest
import torch
from conftest import tiny_gpt2, tiny_llama

from mathneuro.finetune import finetune
from mathneuro.masks import ParameterMask
from mathneuro.plant import plant, restore, truth_set
from mathneuro.tables import ALL_MODULES as ALL
from mathneuro.tables import localization
from mathneuro.targets import find_targets
from mathneuro.training import collate, encode

pytestmark = pytest.mark.usefixtures("one_thread")

BUILDS = {"llama": tiny_llama, "gpt2 (Conv1D)": tiny_gpt2}
ADDITION = [f"{a} + {b} = {a + b}" for a in range(9) for b in range(9)]
TEXTS = [f"{a} * {b} = {a * b}" for a in range(9) for b in range(9)]  # the skill planted


@pytest.mark.parametrize("build", BUILDS.values(), ids=BUILDS)
@pytest.mark.parametrize("share", [0.05, 0.3])
def test_an_entries_set_holds_its_share_of_every_target_matrix_drawn_by_seed(tokenizer, build, share):
    model = build(len(tokenizer))
    truth = truth_set(model, "entries", share, seed=0)
    targets = find_targets(model)
    assert set(truth) == {t.param_name for t in targets}
    for t in targets:
        assert truth.counts()[t.param_name] == round(share * t.weight.numel()), t.name
    assert truth == truth_set(model, "entries", share, seed=0)
    assert truth != truth_set(model, "entries", share, seed=1)


def neurons_of(truth: ParameterMask, t, hidden: int) -> torch.Tensor:
    """(neurons, hidden) view of an MLP matrix's part of the set: a writer's rows, a reader's
    columns (transposed in GPT-2's Conv1D)."""
    selected = truth[t.param_name].T if t.transposed else truth[t.param_name]  # (out, in)
    return selected if selected.shape[1] == hidden else selected.T


@pytest.mark.parametrize("build", BUILDS.values(), ids=BUILDS)
def test_a_neurons_set_holds_whole_neurons_of_every_mlp_and_nothing_else(tokenizer, build):
    model = build(len(tokenizer))
    hidden, share = model.config.hidden_size, 0.25
    truth = truth_set(model, "neurons", share, seed=0)
    blocks = {}
    for t in find_targets(model):
        if ".mlp." not in t.name:
            assert not truth[t.param_name].any(), t.name
            continue
        by_neuron = neurons_of(truth, t, hidden)
        whole = by_neuron.all(dim=1)
        assert torch.equal(whole, by_neuron.any(dim=1)), t.name  # a neuron is in S whole or not at all
        assert int(whole.sum()) == round(share * whole.numel()), t.name
        blocks.setdefault(t.name.split(".mlp.")[0], []).append(whole)
    assert len(blocks) == model.config.num_hidden_layers
    for layer, neurons in blocks.items():  # every matrix of a block holds the same neurons
        assert len(neurons) >= 2 and all(torch.equal(n, neurons[0]) for n in neurons), layer
    assert truth != truth_set(model, "neurons", share, seed=1)


@pytest.mark.parametrize("shape", ["entries", "neurons"])
def test_a_random_set_of_s_count_is_never_s_itself(tokenizer, shape):
    """S's random baselines (mathneuro.masks.random_like under the repeats' seeds) draw from other
    streams than S, under the planting's seed or any other."""
    from mathneuro.masks import random_like

    model = tiny_llama(len(tokenizer))
    for seed in range(3):
        truth = truth_set(model, shape, 0.2, seed=seed)
        for other in range(3):
            drawn = random_like(truth, other)
            assert drawn.counts() == truth.counts()
            assert (drawn & truth).count() < 0.5 * truth.count(), (seed, other)


def test_a_set_of_an_unknown_shape_or_share_is_refused(tokenizer):
    model = tiny_llama(len(tokenizer))
    with pytest.raises(ValueError, match="shape is one of"):
        truth_set(model, "heads", 0.1, seed=0)
    with pytest.raises(ValueError, match="share must lie in"):
        truth_set(model, "entries", 1.5, seed=0)


def mean_loss(model, tokenizer, texts) -> float:
    with torch.no_grad():
        return float(model(**collate(encode(tokenizer, texts, 32), tokenizer.pad_token_id)).loss)


@pytest.mark.parametrize("shape", ["entries", "neurons"])
def test_the_planted_skill_lives_in_its_set_and_restoring_the_set_gives_the_base_bit_for_bit(tokenizer, shape):
    base = tiny_llama(len(tokenizer))  # a base that knows the tokens (addition), not the skill
    finetune(base, tokenizer, ADDITION, steps=100, batch_size=8, lr=0.01, warmup=5, max_length=32, log=lambda _: None)
    state = {name: p.detach().clone() for name, p in base.named_parameters()}
    model = copy.deepcopy(base)
    truth = truth_set(model, shape, 0.2, seed=0)
    planted = plant(model, tokenizer, TEXTS, truth, steps=100, batch_size=8, lr=0.01, warmup=5, max_length=32,
                    seed=0, log=lambda _: None)
    assert mean_loss(model, tokenizer, TEXTS) < 0.5 * mean_loss(base, tokenizer, TEXTS)  # the skill was learned
    params = dict(model.named_parameters())
    for name, before in state.items():
        inside = truth[name] if name in truth else torch.zeros_like(before, dtype=torch.bool)
        assert torch.equal(params[name][~inside], before[~inside]), name  # nothing outside S moved
        if inside.any():
            assert torch.equal(params[name][inside], planted[name])
    restore(model, state, truth)
    assert all(torch.equal(p, state[name]) for name, p in model.named_parameters())
    assert mean_loss(model, tokenizer, TEXTS) == mean_loss(base, tokenizer, TEXTS)


def masks(**matrices) -> ParameterMask:
    """A mask over named matrices, each given as rows of 0/1."""
    return ParameterMask({name: torch.tensor(rows, dtype=torch.bool) for name, rows in matrices.items()})


def test_localization_counts_precision_recall_and_jaccard_per_module_type_and_over_all():
    q0, q1, down = "model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.q_proj.weight", \
        "model.layers.0.mlp.down_proj.weight"
    truth = masks(**{q0: [[1, 1], [0, 0]], q1: [[0, 0], [0, 0]], down: [[1, 0, 0], [1, 0, 0]]})
    found = masks(**{q0: [[1, 0], [1, 0]], q1: [[0, 1], [0, 0]], down: [[1, 0, 0], [1, 0, 0]]})
    table = localization(found, truth, method="m", k="5pct").set_index("module")
    assert list(table.index) == ["down_proj", "q_proj", ALL]
    assert (table["method"] == "m").all() and (table["k"] == "5pct").all()
    # q_proj: found 3 (two in layer 0, one in layer 1), truth 2, one hit; 8 entries
    assert table.loc["q_proj", ["numel", "found", "truth", "hits"]].tolist() == [8, 3, 2, 1]
    assert table.loc["q_proj", "precision"] == pytest.approx(1 / 3)
    assert table.loc["q_proj", "recall"] == pytest.approx(1 / 2)
    assert table.loc["q_proj", "jaccard"] == pytest.approx(1 / 4)
    assert table.loc["q_proj", "chance"] == pytest.approx(2 / 8)
    assert table.loc["down_proj", ["precision", "recall", "jaccard"]].tolist() == [1.0, 1.0, 1.0]
    assert table.loc[ALL, ["numel", "found", "truth", "hits"]].tolist() == [14, 5, 4, 3]
    assert table.loc[ALL, "jaccard"] == pytest.approx(3 / 6)


def test_an_empty_found_set_has_no_precision_and_zero_recall():
    name = "model.layers.0.mlp.up_proj.weight"
    table = localization(masks(**{name: [[0, 0]]}), masks(**{name: [[1, 0]]})).set_index("module")
    assert math.isnan(table.loc[ALL, "precision"]) and table.loc[ALL, "recall"] == 0.0


def test_a_found_set_over_other_matrices_is_refused():
    with pytest.raises(ValueError, match="does not fit"):
        localization(masks(a=[[1]]), masks(b=[[1]]))


@pytest.mark.parametrize("shape", ["entries", "neurons"])
def test_the_truth_against_itself_is_perfect_and_a_random_set_scores_chance(tokenizer, shape):
    model = tiny_llama(len(tokenizer))
    truth = truth_set(model, shape, 0.2, seed=0)
    perfect = localization(truth, truth).set_index("module").loc[ALL]
    assert perfect[["precision", "recall", "jaccard"]].tolist() == [1.0, 1.0, 1.0]
    # a random share of every matrix: its expected precision is S's share of all entries
    drawn = pd.concat([localization(truth_set(model, "entries", 0.3, seed), truth).set_index("module").loc[[ALL]]
                       for seed in range(1, 21)])
    assert drawn["precision"].mean() == pytest.approx(perfect["chance"], rel=0.15)
