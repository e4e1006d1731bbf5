"""mathneuro.stats against references: statsmodels' exact McNemar test, the sign-flip test's
distribution enumerated by hand, Holm's step-down rule written out, and constructed cases whose
answers are known (identical answers, every answer flipped, a ratio of sums)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar

from mathneuro.stats import holm, mcnemar, ratio_change


def outcomes(n: int, p_right: float, flip: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired right/wrong outcomes: a reference, and an edit that flips a share of them."""
    rng = np.random.default_rng(seed)
    reference = (rng.random(n) < p_right).astype(float)
    edited = np.where(rng.random(n) < flip, 1 - reference, reference)
    return reference, edited


CASES = [(n, p, flip, seed) for n in (10, 200, 1319) for p, flip in ((0.5, 0.1), (0.9, 0.02), (0.2, 0.3)) for seed in (0, 1)]


@pytest.mark.parametrize(("n", "p_right", "flip", "seed"), CASES)
def test_mcnemar_is_statsmodels_exact_test_and_ratio_change_agrees(n, p_right, flip, seed):
    reference, edited = outcomes(n, p_right, flip, seed)
    table = [[int(((reference == a) & (edited == b)).sum()) for b in (1, 0)] for a in (1, 0)]
    expected = statsmodels_mcnemar(table, exact=True).pvalue
    got = mcnemar(reference, edited)
    assert (got["lost"], got["gained"]) == (table[0][1], table[1][0])
    assert got["p_value"] == pytest.approx(expected, rel=1e-12)
    change = ratio_change(edited - reference)
    assert change["p_value"] == pytest.approx(expected, rel=1e-12)  # one repeat of right/wrong: McNemar
    assert change["change"] == pytest.approx(edited.mean() - reference.mean())
    assert change["low"] <= change["change"] <= change["high"] and change["n_items"] == n


def test_identical_answers_give_p_one_and_no_change():
    reference, _ = outcomes(200, 0.6, 0.0, 3)
    for result in (ratio_change(reference - reference), ratio_change(np.zeros(200), np.full(200, 7.0))):
        assert result == {"change": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0, "n_items": 200}
    assert mcnemar(reference, reference)["p_value"] == 1.0


def test_every_answer_flipped_gives_a_tiny_p():
    reference = np.ones(60)
    result = ratio_change(np.zeros(60) - reference)
    assert result["change"] == -1.0 and result["low"] == result["high"] == -1.0
    assert result["p_value"] == pytest.approx(2 * 0.5 ** 60)
    assert mcnemar(reference, np.zeros(60)) == {"lost": 60, "gained": 0, "p_value": pytest.approx(2 * 0.5 ** 60)}


def enumerated_sign_flip_p(differences: np.ndarray) -> float:
    """The sign-flip test's two-sided p-value by every sign pattern: the share of patterns whose
    sum is at least as far out as the observed, on the side it lies (doubled, at most 1)."""
    moved = differences[differences != 0]
    observed = moved.sum()
    sums = np.array([np.dot(signs, np.abs(moved)) for signs in itertools.product((-1, 1), repeat=len(moved))])
    tail = min(np.mean(sums >= observed - 1e-12), np.mean(sums <= observed + 1e-12))
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("seed", range(6))
def test_repeats_pooled_give_the_enumerated_sign_flip_p_value(seed):
    """Two repeats of right/wrong outcomes: each item's difference is -1, -1/2, 0, 1/2 or 1."""
    reference, first = outcomes(100, 0.6, 0.05, seed)
    rng = np.random.default_rng(seed + 100)
    second = np.where(rng.random(100) < 0.04, 1 - reference, first)  # another set: some items differ
    differences = ((first - reference) + (second - reference)) / 2
    assert 0 < np.count_nonzero(differences) <= 16
    result = ratio_change(differences)
    assert result["p_value"] == pytest.approx(enumerated_sign_flip_p(differences), rel=1e-9)
    assert result["change"] == pytest.approx(differences.mean())


@pytest.mark.parametrize("moved", [1, 2, 3])
def test_a_few_moved_items_of_unequal_weights_give_the_enumerated_p_value(moved):
    """A group's items weigh unequally (or texts differ in bytes): the one-step binomial shortcut
    does not apply, and one moved item (which scipy cannot permute) is as exact as several."""
    numerators = np.zeros(40)
    numerators[:moved] = -np.arange(1, moved + 1) / 7
    denominators = np.linspace(1.0, 3.0, 40)
    result = ratio_change(numerators, denominators)
    assert result["p_value"] == pytest.approx(enumerated_sign_flip_p(numerators), rel=1e-9)


def pooled_losses(n: int, seed: int) -> np.ndarray:
    """Two repeats of an edit that loses every item it moves, in one repeat or both: -1/2 or -1."""
    return -np.random.default_rng(seed).choice([0.5, 1.0], size=n)


def test_a_small_monte_carlo_p_is_drawn_again_and_resolves_far_below_the_first_draws_floor():
    """330 items lost and none gained (the toy's MathNeuro at K = 5 %), pooled over two repeats:
    every draw of the sign-flip test is less extreme, so p is the Monte Carlo floor of the refined
    draws, 2 / (REFINED_RESAMPLES + 1), not of the first (2e-4, that of a 10/0 split)."""
    from mathneuro.stats import N_RESAMPLES, REFINED_RESAMPLES

    strong = ratio_change(pooled_losses(330, 0))
    assert strong["p_value"] == pytest.approx(2 / (REFINED_RESAMPLES + 1))
    assert strong["p_value"] < 2 / (N_RESAMPLES + 1) / 5
    ten = ratio_change(np.r_[pooled_losses(10, 1), np.zeros(320)])
    assert ten["p_value"] == pytest.approx(enumerated_sign_flip_p(pooled_losses(10, 1)), rel=1e-9)
    assert strong["p_value"] < ten["p_value"] / 10  # 330/0 is told from 10/0


def test_a_p_value_that_is_not_small_keeps_its_first_draws():
    from scipy.stats import permutation_test

    from mathneuro.stats import BATCH, N_RESAMPLES, REFINE_BELOW, SEED

    differences = np.random.default_rng(3).choice([-1.0, -0.5, 0.5, 1.0], size=200)  # p about 0.1
    got = ratio_change(differences)["p_value"]
    first = permutation_test((differences,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
                             vectorized=True, n_resamples=N_RESAMPLES, batch=BATCH,
                             rng=np.random.default_rng(SEED)).pvalue
    assert got == first >= REFINE_BELOW


def test_the_interval_of_many_items_is_the_normal_one():
    """With 4,000 items the bootstrap's percentile interval is change ± 1.96 standard errors."""
    rng = np.random.default_rng(7)
    differences = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0, 1.0], size=4000)
    result = ratio_change(differences)
    half = 1.959964 * differences.std(ddof=1) / math.sqrt(len(differences))
    assert result["low"] == pytest.approx(result["change"] - half, abs=0.15 * half)
    assert result["high"] == pytest.approx(result["change"] + half, abs=0.15 * half)


def test_bits_per_byte_is_a_ratio_of_sums_paired_per_text():
    """Bits per byte = -Σ loglikelihood / (ln 2 Σ bytes): the change of two models on the same texts
    is the difference of their ratios, tested by texts."""
    rng = np.random.default_rng(1)
    size = rng.integers(50, 400, size=300).astype(float)
    reference = -size * rng.uniform(0.5, 1.5, size=300)
    edited = reference - rng.normal(2.0, 1.0, size=300)  # every text a little less likely
    bpb = lambda ll: -ll.sum() / (math.log(2) * size.sum())  # noqa: E731
    result = ratio_change(-(edited - reference) / math.log(2), size)
    assert result["change"] == pytest.approx(bpb(edited) - bpb(reference))
    assert result["low"] < result["change"] < result["high"] and result["low"] > 0 and result["p_value"] < 1e-3
    same = ratio_change(np.zeros(300), size)
    assert same["p_value"] == 1.0 and same["change"] == 0.0


def test_holm_is_the_step_down_rule_and_leaves_untested_rows_out():
    p = np.array([0.01, 0.04, np.nan, 0.03, 0.005, 0.2])
    tested = p[~np.isnan(p)]
    order = np.argsort(tested)
    adjusted = np.empty_like(tested)
    running = 0.0
    for rank, index in enumerate(order):  # p_(i) * (m - i), made monotone, capped at 1
        running = max(running, min(1.0, tested[index] * (len(tested) - rank)))
        adjusted[index] = running
    got = holm(p)
    assert np.isnan(got[2])
    assert np.allclose(got[~np.isnan(p)], adjusted)
    assert np.isnan(holm([np.nan])).all() and holm([]).size == 0


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="0 or 1"):
        mcnemar([0.5], [1.0])
    with pytest.raises(ValueError, match="shape"):
        mcnemar([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        ratio_change([1.0], [0.0])
    assert math.isnan(ratio_change([])["change"])


def test_holm_leaves_garbage_collection_as_it_found_it():
    """holm freezes the heap around statsmodels' call (which runs gc.collect every time): after
    it, nothing stays frozen, and objects made before it are collected again as ever."""
    import gc
    import weakref

    class Cycle:
        pass

    made = Cycle()
    made.me = made  # a reference cycle: only the collector frees it
    alive = weakref.ref(made)
    del made
    holm([0.01, 0.2])
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    gc.collect()
    assert alive() is None
