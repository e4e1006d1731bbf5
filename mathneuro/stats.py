"""Paired statistics of an edit: how much it changed a measure, with a 95 % interval and a p-value,
from per-item outcomes of the edited model and of a reference (the unedited model, or a baseline
set of the same count) on the same items.

Every measure the edit tables report is a ratio of sums over items, Σ numerator / Σ denominator:

* accuracy (and any mean of per-item scores): the numerator of item i is its score difference
  (edited - reference, averaged over the repeats), times the item's weight; the denominator is the
  weight (1 per item; a group of subtasks that lm-eval averages unweighted gives each subtask's
  items together the same weight);
* bits per byte, a corpus measure (-Σ log-likelihood / (ln 2 · Σ bytes)), not a mean of per-text
  values: the numerator is the text's log-likelihood difference times -1/ln 2, the denominator its
  bytes.

So one pair of tests serves every measure:

* the interval is a **paired bootstrap over items** (scipy.stats.bootstrap, percentile method,
  ``paired=True``): items are resampled with their numerator and denominator together, and with
  every repeat of an item together (the repeats are averaged into the item's numerator first), so
  the interval is that of the items, for these sets. Repeats share items and differ in their
  sets; two or five repeats cannot carry a set-to-set variance, so the tables report the repeats'
  spread (std, min, max) beside the interval instead of folding it in;
* the p-value is the **sign-flip permutation test** of the numerators (scipy.stats.permutation_test,
  ``permutation_type="samples"``): under "the edit changes nothing", edited and reference outcomes
  of an item are exchangeable, so each item's difference is as likely with either sign. Items
  without a difference cannot change sign and are left out (the sum is the same); the test is
  exact (every sign pattern) up to 16 items with a difference, else Monte Carlo with a seeded
  generator: 9,999 draws, and where that finds p < 0.001, 99,999, so that a small p resolves to
  2e-5 (a two-sided Monte Carlo p is at least 2 / (draws + 1)), over thirty times below Holm's
  strictest threshold in a family as large as the paper config's suites reach (74 lm-eval tasks
  and groups: one set's tasks, tests/test_tasks.py). For one repeat
  of right/wrong outcomes its exact distribution is the binomial one of the **exact McNemar
  test** (discordant items, each way with probability 1/2), which is what is computed then, at
  any size (scipy.stats.binomtest), with the items lost and gained.

Many rows are tested at once, so :func:`holm` adjusts a family's p-values (statsmodels'
``multipletests``, Holm's step-down method: valid under any dependence between the rows, which
variants of one model on one task have).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

CONFIDENCE = 0.95
N_RESAMPLES = 9999
REFINE_BELOW, REFINED_RESAMPLES = 0.001, 99_999  # a small Monte Carlo p drawn again, finer
EXACT_UP_TO = 16  # items with a difference: 2**16 sign patterns enumerated; beyond, Monte Carlo
SEED = 0
BATCH = 1000  # resamples computed at once: memory stays at BATCH x items


def mcnemar(reference: Sequence[float], edited: Sequence[float]) -> dict[str, float]:
    """The exact McNemar test of paired right/wrong outcomes (1 right, 0 wrong): ``lost`` (right
    before, wrong after), ``gained`` and the two-sided p-value, the binomial test of ``gained``
    among the discordant items with probability 1/2 (1.0 when there are none)."""
    from scipy.stats import binomtest

    reference, edited = np.asarray(reference, dtype=float), np.asarray(edited, dtype=float)
    if reference.shape != edited.shape:
        raise ValueError(f"paired outcomes differ in shape: {reference.shape} and {edited.shape}")
    if not np.isin(reference, (0, 1)).all() or not np.isin(edited, (0, 1)).all():
        raise ValueError("McNemar's test needs right/wrong outcomes (0 or 1)")
    lost = int(((reference == 1) & (edited == 0)).sum())
    gained = int(((reference == 0) & (edited == 1)).sum())
    p = binomtest(gained, lost + gained, 0.5).pvalue if lost + gained else 1.0
    return {"lost": lost, "gained": gained, "p_value": float(p)}


def ratio_change(numerators: Sequence[float], denominators: Sequence[float] | None = None, *,
                 confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                 seed: int = SEED) -> dict[str, float]:
    """The change Σ numerators / Σ denominators (denominators: 1 per item when None), its paired
    bootstrap interval over items and the sign-flip test's two-sided p-value (module docstring).
    Returns ``change``, ``low``, ``high``, ``p_value`` and ``n_items``; NaN for no items."""
    from scipy.stats import binomtest, bootstrap

    num = np.asarray(numerators, dtype=float)
    den = np.ones_like(num) if denominators is None else np.asarray(denominators, dtype=float)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError(f"one numerator and one denominator per item, not shapes {num.shape} and {den.shape}")
    if not np.isfinite(num).all() or not np.isfinite(den).all() or (den <= 0).any():
        raise ValueError("numerators must be finite and denominators finite and positive")
    n = len(num)
    if n == 0:
        return {"change": math.nan, "low": math.nan, "high": math.nan, "p_value": math.nan, "n_items": 0}
    change = float(num.sum() / den.sum())
    moved = num[num != 0]
    sizes = np.unique(np.abs(moved))
    if moved.size <= 1:  # no item, or one whose two signs are the two patterns: nothing is extreme
        p = 1.0
    elif sizes.size == 1 and np.all(den == den[0]):  # one size of step: the binomial distribution
        p = binomtest(int((moved > 0).sum()), moved.size, 0.5).pvalue
    else:
        p = sign_flip_p(moved, n_resamples, seed)
    if np.all(num == num[0]) and np.all(den == den[0]):  # every resample is the sample itself
        low = high = change
    else:
        result = bootstrap((num, den), lambda a, b, axis: a.sum(axis=axis) / b.sum(axis=axis), paired=True,
                           vectorized=True, n_resamples=n_resamples, batch=BATCH, method="percentile",
                           confidence_level=confidence, rng=np.random.default_rng(seed))
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return {"change": change, "low": low, "high": high, "p_value": float(min(1.0, p)), "n_items": n}


def sign_flip_p(moved: np.ndarray, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> float:
    """The sign-flip test's two-sided p-value of the sum of ``moved`` (every value non-zero): exact
    up to ``EXACT_UP_TO`` values, else Monte Carlo, drawn again with ``REFINED_RESAMPLES`` draws
    where ``n_resamples`` find it under ``REFINE_BELOW`` (module docstring)."""
    from scipy.stats import permutation_test

    def test(draws: int) -> float:
        return permutation_test((moved,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
                                vectorized=True, n_resamples=draws, batch=BATCH,
                                rng=np.random.default_rng(seed)).pvalue

    if moved.size <= EXACT_UP_TO:  # every sign pattern, when there are few enough
        return test(max(n_resamples, 2 ** moved.size))
    p = test(n_resamples)
    return test(max(n_resamples, REFINED_RESAMPLES)) if p < REFINE_BELOW else p


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values of one family (statsmodels' ``multipletests(method="holm")``); NaN
    p-values (rows that could not be tested) stay NaN and do not count in the family."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    tested = ~np.isnan(p)
    if tested.any():
        with _frozen_heap():
            adjusted[tested] = multipletests(p[tested], method="holm")[1]
    return adjusted


@contextmanager
def _frozen_heap():
    """The objects alive now left out of garbage collection for the block. multipletests calls
    ``gc.collect()`` on every call, which walks every live object: with the aggregate's tables in
    memory that was 0.14 s a call, a third of the aggregate's time (benchmarks/README.md); frozen,
    the collection sees only what the block makes. Nothing changes in what is computed."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
