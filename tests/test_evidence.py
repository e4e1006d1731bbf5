"""The edit tables' paired statistics (mathneuro.evidence through mathneuro.tables.build_tables)
on constructed evaluations: every number is recomputed here from the per-item records with
statsmodels (exact McNemar, Holm) or from the definition (a group's weights, bits per byte)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from mathneuro import stats
from mathneuro.evidence import BASELINES
from mathneuro.methods import METHODS
from mathneuro.stats import ratio_change
from mathneuro.summary import change_table
from mathneuro.tables import build_tables

SPECIFIC = next(iter(BASELINES))  # the method whose sets have a same-count baseline (MathNeuro)
BASELINE = BASELINES[SPECIFIC]
OTHER = next(m for m, method in METHODS.items() if method.top_k_set)  # a method without a baseline
SEEDS = [0, 1]
LEAVES = {"grp_a": 30, "grp_b": 70}  # a group's subtasks and their sizes


def outcomes(n: int, p_right: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p_right).astype(float)


def flipped(reference: np.ndarray, share: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(len(reference)) < share, 1 - reference, reference)


def variants(methods, models=("m",), ks=(("5pct", 0.05),), edits=(("x0", 0.0),)) -> list[dict]:
    """The unedited models and each set's repeats, labelled as evaluate jobs label them."""
    bases = [{"model": model, "method": "base", "suite": "s"} for model in models]
    edited = [{"model": model, "method": method, "control": "c" if method != OTHER else "none", "n_samples": 10,
               "seed": seed, "k": k, "k_fraction": fraction, "edit": edit, "factor": factor, "suite": "s"}
              for model in models for method in methods for seed in SEEDS for k, fraction in ks
              for edit, factor in edits]
    return [*bases, *edited]


def draws(labels: dict) -> int:
    """A variant's own seed for its simulated outcomes, from its labels: the same variant draws the
    same outcomes in every study it is part of."""
    return zlib.crc32(repr(sorted(labels.items())).encode())


@pytest.fixture(scope="module", autouse=True)
def first_draws_only():
    """Every Monte Carlo p from its first draws: a small one is not drawn again (what the draws
    resolve is test_stats' subject; here the tables around them are). Measured: this module 62 s
    against 42 s, and ci/lowest.sh's tests, whose older SciPy draws slowly, 58 s against 152 s."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stats, "REFINED_RESAMPLES", stats.N_RESAMPLES)
        yield


@pytest.fixture(scope="module")
def study():
    return evaluated((SPECIFIC, BASELINE, OTHER))


def evaluated(methods, made_by=None, **grid):
    """Per-item records of the unedited model and each method's sets (``grid``: the models, Ks and
    edits of :func:`variants`) on a task, two subtasks of two groups (one weighted by size, one by
    subtask) and a bits-per-byte task, with the result rows lm-eval would report (``made_by``:
    labels -> the versions their evaluation records), and the edit tables built from them."""
    sizes = {"t": 120, **LEAVES}
    texts = np.random.default_rng(9).integers(40, 300, size=80).astype(float)
    rows, items = [], []
    for labels in variants(methods, **grid):
        seed = draws(labels)
        first_row = len(rows)
        scores = {task: outcomes(n, 0.7, 100 + j) for j, (task, n) in enumerate(sizes.items())}
        if labels["method"] != "base":
            share = {SPECIFIC: 0.35, BASELINE: 0.05, OTHER: 0.5}[labels["method"]]
            scores = {task: flipped(s, share, seed + j) for j, (task, s) in enumerate(scores.items())}
        loglikelihood = -texts * (1.0 + (0.02 * (1 + seed % 7) if labels["method"] != "base" else 0.0)) \
            + np.random.default_rng(seed).normal(0, 1, size=len(texts))
        for task, values in scores.items():
            items += [{**labels, "task": task, "doc_id": d, "metric": "acc,none", "score": v}
                      for d, v in enumerate(values)]
            rows.append({**labels, "task": task, "metric": "acc,none", "value": values.mean(), "n": len(values)})
        pooled = np.concatenate([scores[t] for t in LEAVES])
        rows.append({**labels, "task": "grp", "metric": "acc,none", "value": pooled.mean()})  # by size
        rows.append({**labels, "task": "grp_mean", "metric": "acc,none",
                     "value": np.mean([scores[t].mean() for t in LEAVES])})  # each subtask equally
        rows.append({**labels, "task": "grp_odd", "metric": "acc,none", "value": pooled.mean() + 0.01})  # neither
        items += [{**labels, "task": "bpb_x", "doc_id": d, "metric": "bits_per_byte,none", "score": math.nan,
                   "loglikelihood": ll, "weight": b} for d, (ll, b) in enumerate(zip(loglikelihood, texts))]
        rows.append({**labels, "task": "bpb_x", "metric": "bits_per_byte,none", "n": len(texts),
                     "value": -loglikelihood.sum() / (math.log(2) * texts.sum())})
        for row in rows[first_row:]:
            row.update(made_by(labels) if made_by else {})
    groups = {(model, "s"): {"grp": list(LEAVES), "grp_mean": list(LEAVES), "grp_odd": list(LEAVES)}
              for model in grid.get("models", ["m"])}
    samples = pd.DataFrame(items)
    tables = build_tables(pd.DataFrame(rows), pd.DataFrame(columns=["model", "method", "control", "k", "k_fraction",
                                                                    "n_samples", "seed", "parameter", "layer",
                                                                    "module", "selected", "numel", "model_parameters"]),
                          pd.DataFrame(columns=["model", "method", "control", "n_samples", "k", "k_fraction",
                                                "seed_a", "seed_b", "metric", "value", "size_a", "size_b",
                                                "intersection"]),
                          pd.DataFrame(columns=["model", "method", "control", "n_samples", "k", "k_fraction",
                                                "seed_a", "seed_b", "layer", "module", "numel", "size_a", "size_b",
                                                "intersection", "union", "jaccard", "overlap_rate"]),
                          selections={"pruning": {"method": list(methods)}}, samples=samples,
                          groups=groups, skill="math")
    return tables["pruning"], samples


def scores_of(samples, method, seed, task) -> np.ndarray:
    rows = samples[(samples["method"] == method) & (samples["task"] == task)]
    if method != "base":
        rows = rows[rows["seed"] == seed]
    return rows.sort_values("doc_id")["score"].to_numpy()


def exact_mcnemar(reference: np.ndarray, edited: np.ndarray) -> float:
    table = [[int(((reference == a) & (edited == b)).sum()) for b in (1, 0)] for a in (1, 0)]
    return mcnemar(table, exact=True).pvalue


def test_each_repeat_is_tested_against_the_unedited_model_and_its_baseline_with_exact_mcnemar(study):
    (table, _), samples = study
    base = scores_of(samples, "base", None, "t")
    for _, row in table[table["task"] == "t"].iterrows():
        mine = scores_of(samples, row["method"], row["seed"], "t")
        assert row["n_items"] == len(base)
        assert (row["lost"], row["gained"]) == (((base == 1) & (mine == 0)).sum(), ((base == 0) & (mine == 1)).sum())
        assert row["p_value"] == pytest.approx(exact_mcnemar(base, mine), rel=1e-12)
        assert row["change"] == pytest.approx(mine.mean() - base.mean())
        assert row["change_low"] <= row["change"] <= row["change_high"]
        if row["method"] == SPECIFIC:
            theirs = scores_of(samples, BASELINE, row["seed"], "t")
            assert row["baseline"] == BASELINE
            assert row["baseline_change"] == pytest.approx(mine.mean() - theirs.mean())
            assert row["baseline_p"] == pytest.approx(exact_mcnemar(theirs, mine), rel=1e-12)
        else:
            assert pd.isna(row["baseline"]) and pd.isna(row["baseline_p"])


def test_a_set_whose_baseline_was_not_evaluated_names_no_baseline():
    """An analysis that edits a set without its same-count baseline (a scaling with only the
    methods' own sets) has nothing to compare it with: no baseline, not an empty comparison."""
    (table, summary), _ = evaluated((SPECIFIC, OTHER))
    for frame in (table, summary):
        assert frame["baseline"].isna().all() and frame["baseline_p_holm"].isna().all()
        assert frame["p_value"].notna().any()  # its comparison with the unedited model stands
    assert not change_table(summary, k="5pct", edit="x0")["set"].str.startswith("  −").any()  # no "− random" row


def test_holms_family_is_one_sets_tasks_on_one_metric(study):
    """Per repeat, one set (its repeat) under one edit on one metric, over its tasks; pooled, the
    same without the repeat: each family adjusted as statsmodels adjusts it alone."""
    (table, summary), _ = study
    family = ["model", "skill", "method", "control", "n_samples", "k", "edit", "metric"]
    for frame, keys in ((table, [*family, "seed"]), (summary, family)):
        sizes = []
        for _, part in frame.groupby([k for k in keys if k in frame.columns], dropna=False):
            for p, adjusted in (("p_value", "p_holm"), ("baseline_p", "baseline_p_holm")):
                tested = part[p].notna()
                if tested.any():
                    assert np.allclose(part.loc[tested, adjusted], multipletests(part.loc[tested, p], method="holm")[1])
                assert part.loc[~tested, adjusted].isna().all()
            sizes.append(part["task"].nunique())
        assert max(sizes) > 1  # a family holds several tasks
    assert (summary["significant"] == (summary["p_holm"] < 0.05)).all()


GROWN = {
    "a K": {"ks": (("5pct", 0.05), ("10pct", 0.10))},
    "an edit": {"edits": (("x0", 0.0), ("x1.1", 1.1))},
    "a model": {"models": ("m", "m2")},
}


@pytest.mark.parametrize("what", [*GROWN, "a method"])
def test_adding_a_k_an_edit_a_method_or_a_model_changes_no_existing_rows_adjusted_p_value(what):
    """Holm's families do not span sets, edits or models: a study grown by one of them keeps every
    row it had, adjusted p-value and star included."""
    (table, summary), _ = evaluated((SPECIFIC, BASELINE))
    (grown_table, grown_summary), _ = evaluated((SPECIFIC, BASELINE, OTHER) if what == "a method" else
                                                (SPECIFIC, BASELINE), **GROWN.get(what, {}))
    labels = ["model", "method", "control", "k", "edit", "task", "metric"]
    for before, after, extra in ((table, grown_table, ["seed"]), (summary, grown_summary, [])):
        assert len(after) > len(before)
        kept = before.merge(after, on=labels + extra, suffixes=("", "_grown"), validate="one_to_one")
        assert len(kept) == len(before)
        for column in ("p_value", "p_holm", "baseline_p_holm"):
            assert np.allclose(kept[column], kept[f"{column}_grown"], equal_nan=True), column
        if "significant" in kept:
            assert (kept["significant"] == kept["significant_grown"]).all()


def test_each_row_names_the_versions_of_its_evaluation_and_a_summary_joins_its_repeats(study):
    """Versions never split a set's repeats nor change a number: one repeat made with another
    torch gives the same tables, each row naming its own evaluation's versions, the summary the
    repeats' joined."""
    from mathneuro.provenance import VERSION_COLUMNS

    def made_by(labels):
        other = labels["method"] == SPECIFIC and labels.get("seed") == 1
        return {"code": "abc", "torch": "2.12.0" if other else "2.13.0", "transformers": "5.0", "lm_eval": "0.4",
                "snakemake": "9.0"}

    (table, summary), _ = evaluated((SPECIFIC, BASELINE, OTHER), made_by=made_by)
    (plain_table, plain_summary), _ = study
    pd.testing.assert_frame_equal(table.drop(columns=VERSION_COLUMNS), plain_table.drop(columns=VERSION_COLUMNS))
    pd.testing.assert_frame_equal(summary.drop(columns=VERSION_COLUMNS),
                                  plain_summary.drop(columns=VERSION_COLUMNS))
    assert plain_table[VERSION_COLUMNS].isna().all().all()  # rows made before versions were kept
    other = (table["method"] == SPECIFIC) & (table["seed"] == 1)
    assert set(table.loc[other, "torch"]) == {"2.12.0"} and set(table.loc[~other, "torch"]) == {"2.13.0"}
    joined = {method: set(part) for method, part in summary.groupby("method")["torch"]}
    assert joined[SPECIFIC] == {"2.12.0, 2.13.0"} and joined[BASELINE] == joined[OTHER] == {"2.13.0"}
    assert set(summary["code"]) == {"abc"}


def test_the_summary_pools_every_items_repeats(study):
    (_, summary), samples = study
    base = scores_of(samples, "base", None, "t")
    row = summary[(summary["task"] == "t") & (summary["method"] == SPECIFIC)].iloc[0]
    repeats = [scores_of(samples, SPECIFIC, s, "t") for s in SEEDS]
    expected = ratio_change(np.mean([r - base for r in repeats], axis=0))
    assert row["change_mean"] == pytest.approx(expected["change"])
    assert (row["change_low"], row["change_high"], row["p_value"]) == pytest.approx(
        (expected["low"], expected["high"], expected["p_value"]))
    assert row["change_std"] == pytest.approx(np.std([r.mean() - base.mean() for r in repeats], ddof=1))
    baselines = [scores_of(samples, BASELINE, s, "t") for s in SEEDS]
    against = ratio_change(np.mean([r - b for r, b in zip(repeats, baselines)], axis=0))
    assert (row["baseline_change"], row["baseline_p"]) == pytest.approx((against["change"], against["p_value"]))


@pytest.mark.parametrize(("group", "weights"), [("grp", "size"), ("grp_mean", "subtask"), ("grp_odd", None)])
def test_a_group_pairs_its_subtasks_items_weighted_as_its_value_is(study, group, weights):
    (table, _), samples = study
    rows = table[table["task"] == group]
    if weights is None:  # a value neither weighting gives: no statistics rather than wrong ones
        assert rows["p_value"].isna().all() and rows["change_low"].isna().all()
        return
    for _, row in rows.iterrows():
        base = np.concatenate([scores_of(samples, "base", None, t) for t in LEAVES])
        mine = np.concatenate([scores_of(samples, row["method"], row["seed"], t) for t in LEAVES])
        w = np.ones_like(base) if weights == "size" else np.concatenate([np.full(n, 1 / n) for n in LEAVES.values()])
        expected = ratio_change(w * (mine - base), w)
        assert row["n_items"] == sum(LEAVES.values())
        assert expected["change"] == pytest.approx(row["change"])  # the group's own change, recomputed
        assert (row["change_low"], row["change_high"], row["p_value"]) == pytest.approx(
            (expected["low"], expected["high"], expected["p_value"]))


def test_bits_per_byte_is_paired_per_text_as_a_corpus_ratio(study):
    (table, _), samples = study
    base = samples[(samples["method"] == "base") & (samples["task"] == "bpb_x")].sort_values("doc_id")
    for _, row in table[table["task"] == "bpb_x"].iterrows():
        mine = samples[(samples["method"] == row["method"]) & (samples["seed"] == row["seed"])
                       & (samples["task"] == "bpb_x")].sort_values("doc_id")
        difference = mine["loglikelihood"].to_numpy() - base["loglikelihood"].to_numpy()
        expected = ratio_change(-difference / math.log(2), base["weight"].to_numpy())
        assert expected["change"] == pytest.approx(row["change"])  # value - base_value of the corpus ratios
        assert row["change"] > 0 and row["change_low"] > 0 and row["p_value"] < 1e-3  # every text less likely
        assert pd.isna(row["lost"]) and pd.isna(row["gained"])
