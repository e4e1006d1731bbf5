"""Which edits changed anything: the edit tables' paired statistics, from per-item records.

Every edited variant is compared on the same items with the unedited model, and a set that has a
same-count baseline (MathNeuro's random set, ``mathneuro.methods``: ``same_count_as``) also with
that baseline made from it (the paper's key comparison: is the skill's set worse to lose than any
set of its size?). A table row is one repeat (seed); its summary row pools the repeats, each item
with all its repeats together (``mathneuro.stats``: the tests and why). The columns added:

* per repeat: ``n_items`` (items paired), ``lost`` and ``gained`` (right/wrong outcomes: right
  before and wrong after, and the other way), ``change_low``/``change_high`` (95 % interval of
  ``change``), ``p_value`` (exact McNemar for right/wrong outcomes, else the sign-flip test) and
  ``p_holm``;
* against the baseline: ``baseline`` (its method), ``baseline_change`` (this set's value minus the
  baseline's), ``baseline_low``/``baseline_high``, ``baseline_p``, ``baseline_p_holm``;
* in the summary, the same computed over the repeats pooled, beside the repeats' spread
  (``change_std``, ``change_min``, ``change_max``), and ``significant``/``baseline_significant``
  (Holm-adjusted p below 0.05).

Holm's method adjusts the p-values of one family: one table's rows of one evaluated set under one
edit (model, skill, method, control, sample count, K, edit; one repeat, or the repeats pooled) on
one metric, over the tasks it was measured on, per comparison (against the unedited model, against
the baseline). The question a family answers is "which tasks did this edit change?", so adding a K,
an edit, a method, a sample count, a repeat or a model to a study adds families and changes no
existing row's star; adding a task to the suites enlarges every set's family.

Items: a task's documents by ``doc_id``; a group's (``mmlu``) are its leaf tasks' (``group_subtasks``
of lm-eval's results), each weighted as lm-eval weighs it: by size (one weight per item) or
each subtask equally (its items sharing one weight); which, is read off the group's own value (the
weighting that gives it). Accuracy-like metrics are paired per item (``score``); ``bits_per_byte``
is the corpus ratio -Σ log-likelihood / (ln 2 Σ bytes), paired per text. A row whose items cannot
be paired (other metrics, such as perplexities; missing records) keeps NaN statistics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mathneuro.methods import METHODS
from mathneuro.stats import holm, mcnemar, ratio_change

# one evaluated set and edit (a composite K's sets by their controls' K too)
VARIANT = ["model", "skill", "method", "control", "n_samples", "seed", "k", "control_k_fraction", "edit"]
ITEM_COLUMNS = ["score", "loglikelihood", "weight"]
ALPHA = 0.05
FAMILY = [*VARIANT, "metric"]  # Holm's family: one set, repeat and edit on one metric, over its tasks
REPEAT_COLUMNS = {"n_items": "Int64", "lost": "Int64", "gained": "Int64", "change_low": "float64",
                  "change_high": "float64", "p_value": "float64", "p_holm": "float64", "baseline": "string",
                  "baseline_change": "float64", "baseline_low": "float64", "baseline_high": "float64",
                  "baseline_p": "float64", "baseline_p_holm": "float64"}
SUMMARY_COLUMNS = {key: dtype for key, dtype in REPEAT_COLUMNS.items() if key not in ("lost", "gained")} | {
    "significant": "boolean", "baseline_significant": "boolean"}
BASELINES = {m.same_count_as: name for name, m in METHODS.items() if m.same_count_as}  # set -> its same-count baseline
_TOLERANCE = 1e-9


def _key(labels: Mapping, suite: str) -> tuple:
    """An evaluation's key: its variant's labels (the unedited model's: method 'base' alone) and suite."""
    if labels["method"] == "base":
        return (labels["model"], None, "base", *[None] * (len(VARIANT) - 3), suite)
    return (*(None if pd.isna(labels[c]) else labels[c] for c in VARIANT), suite)



def item_outcomes(samples: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    """Per-item records of every evaluation (``mathneuro.evaluate.samples_frame`` rows labelled with
    their variant, the skill filled in) by evaluation key, metric and task: frames of
    ``score, loglikelihood, weight`` indexed by ``doc_id``."""
    samples = samples.copy()
    for column in VARIANT:
        if column not in samples:
            samples[column] = pd.NA
    keys = [*VARIANT, "suite", "metric", "task"]
    out = {}
    for values, part in samples.groupby(keys, dropna=False, sort=False):
        labels = dict(zip(keys, values))
        out[(_key(labels, labels["suite"]), labels["metric"], labels["task"])] = (
            part.set_index("doc_id")[ITEM_COLUMNS].sort_index())
    return out


def _items(outcomes, key: tuple, metric: str, tasks: Sequence[str]) -> pd.DataFrame | None:
    """The items of ``tasks`` in one evaluation, indexed by (task, doc_id); None if any is missing."""
    frames = [outcomes.get((key, metric, task)) for task in tasks]
    if not frames or any(f is None for f in frames):
        return None
    return pd.concat(frames, keys=list(tasks), names=["task", "doc_id"])


def _weights(items: pd.DataFrame, value: float) -> np.ndarray | None:
    """Item weights under which the items' weighted mean score is ``value`` (lm-eval's result for
    them): one per item, or one per leaf task shared by its items; None if neither gives it."""
    scores = items["score"].to_numpy(dtype=float)
    if not np.isfinite(scores).all() or pd.isna(value):
        return None
    sizes = items.groupby(level="task", sort=False)["score"].transform("size").to_numpy(dtype=float)
    for weights in (np.ones_like(scores), 1.0 / sizes):
        if abs(np.sum(weights * scores) / np.sum(weights) - value) <= _TOLERANCE:
            return weights
    return None


def compare(edited: Sequence[pd.DataFrame | None], reference: Sequence[pd.DataFrame | None], *,
            weights: np.ndarray | None = None) -> dict[str, float]:
    """Paired change of ``edited`` against ``reference`` (one frame of items per repeat; a single
    reference serves every repeat), which must hold the same items: ``change``, ``low``, ``high``,
    ``p_value``, ``n_items``, and ``lost``/``gained`` for one repeat of right/wrong outcomes.
    ``weights``: the items' weights in a score's mean (default one each). Empty where the items
    cannot be paired (a record missing, other items, a metric neither averaged nor bits per byte)."""
    frames = [*edited, *reference]
    if any(f is None for f in frames) or not frames:
        return {}
    index = frames[0].index
    if any(not f.index.equals(index) for f in frames):
        return {}
    references = list(reference) * len(edited) if len(reference) == 1 else list(reference)
    if len(references) != len(edited):
        raise ValueError(f"{len(edited)} edited repeats against {len(reference)} references")
    column = lambda name: [(e[name].to_numpy(float), r[name].to_numpy(float)) for e, r in zip(edited, references)]  # noqa: E731
    if all(np.isfinite(f["score"].to_numpy(float)).all() for f in frames):
        pairs = column("score")
        weights = np.ones(len(index)) if weights is None else np.asarray(weights, dtype=float)
        result = ratio_change(weights * np.mean([e - r for e, r in pairs], axis=0), weights)
        (e, r), = pairs if len(pairs) == 1 else [(None, None)]
        if e is not None and set(np.unique(np.r_[e, r])) <= {0.0, 1.0}:
            counts = mcnemar(r, e)
            result |= {"lost": counts["lost"], "gained": counts["gained"]}
        return result
    if all(np.isfinite(f[["loglikelihood", "weight"]].to_numpy(float)).all() for f in frames):
        size = frames[0]["weight"].to_numpy(float)
        if any(not np.array_equal(f["weight"].to_numpy(float), size) for f in frames):
            return {}  # not the same texts
        diffs = np.mean([e - r for e, r in column("loglikelihood")], axis=0)
        return ratio_change(-diffs / math.log(2), size)  # bits per byte: -Σ loglikelihood / (ln 2 Σ bytes)
    return {}


def _leaves(groups: Mapping[tuple, Mapping[str, Sequence[str]]], model: str, suite: str, task: str) -> list[str]:
    """A task's leaf tasks: a group's (recursively, by lm-eval's ``group_subtasks``), or itself."""
    members = groups.get((model, suite), {})
    if task not in members:
        return [task]
    return [leaf for member in members[task] for leaf in _leaves(groups, model, suite, member)]


def _comparisons(row: Mapping, seeds: Sequence, outcomes, groups) -> dict[str, float]:
    """The statistics of one set and edit on one task and metric, its repeats ``seeds`` pooled
    (one seed: a table row), against the unedited model and against its baseline."""
    leaves = _leaves(groups, row["model"], row["suite"], row["task"])
    items = lambda labels: _items(outcomes, _key(labels, row["suite"]), row["metric"], leaves)  # noqa: E731
    base = items({"model": row["model"], "method": "base"})
    weights = None
    if len(leaves) > 1 and base is not None:  # a group: its items weighted as lm-eval weighs them
        weights = _weights(base, row["base_value"])
        if weights is None:
            return {}
    own = [items({**row, "seed": seed}) for seed in seeds]
    stats = compare(own, [base], weights=weights)
    out = {"n_items": stats.get("n_items"), "lost": stats.get("lost"), "gained": stats.get("gained"),
           "change_low": stats.get("low"), "change_high": stats.get("high"), "p_value": stats.get("p_value")}
    baseline = BASELINES.get(row["method"])
    theirs = [items({**row, "method": baseline, "seed": seed}) for seed in seeds] if baseline else []
    if any(frame is not None for frame in theirs):  # a baseline not evaluated in this analysis: none
        against = compare(own, theirs, weights=weights)
        out |= {"baseline": baseline, "baseline_change": against.get("change"), "baseline_low": against.get("low"),
                "baseline_high": against.get("high"), "baseline_p": against.get("p_value")}
    return out


def repeat_statistics(table: pd.DataFrame, outcomes, groups) -> pd.DataFrame:
    """One edit table's rows (one per repeat) with the paired statistics of each against the
    unedited model and against its set's baseline (module docstring), Holm per family."""
    stats = pd.DataFrame([_comparisons(row, [row["seed"]], outcomes, groups) for _, row in table.iterrows()],
                         index=table.index, columns=list(REPEAT_COLUMNS))
    out = pd.concat([table, stats.astype(REPEAT_COLUMNS)], axis=1)
    return _holm(out, {"p_value": "p_holm", "baseline_p": "baseline_p_holm"}, FAMILY)


def summary_statistics(summary: pd.DataFrame, table: pd.DataFrame, outcomes, groups) -> pd.DataFrame:
    """The summary rows (one per set and edit, over its repeats) with the paired statistics of the
    repeats pooled: each item with all its repeats, against the unedited model and against the
    baseline's repeats of the same seeds."""
    keys = [c for c in VARIANT if c != "seed"] + ["suite", "task", "metric"]
    seeds = {_plain(k): list(part["seed"]) for k, part in table.groupby(keys, dropna=False, sort=False)}
    rows = []
    for _, row in summary.iterrows():
        repeats = seeds.get(_plain(row[c] for c in keys))
        base_value = row.get("base_value_mean")
        rows.append(_comparisons({**row, "base_value": base_value}, repeats, outcomes, groups) if repeats else {})
    columns = [c for c in SUMMARY_COLUMNS if "significant" not in c]
    stats = pd.DataFrame(rows, index=summary.index, columns=columns)
    out = _holm(pd.concat([summary, stats], axis=1), {"p_value": "p_holm", "baseline_p": "baseline_p_holm"},
                [c for c in FAMILY if c != "seed"])
    out["significant"] = out["p_holm"] < ALPHA
    out["baseline_significant"] = out["baseline_p_holm"] < ALPHA
    return out.astype(SUMMARY_COLUMNS)


def _plain(values) -> tuple:
    """Labels as a key that missing values match by (None for each: NaN != NaN)."""
    return tuple(None if pd.isna(v) else v for v in values)


def _holm(frame: pd.DataFrame, columns: Mapping[str, str], family: Sequence[str]) -> pd.DataFrame:
    """Holm-adjusted copies of p-value ``columns`` (p -> adjusted), one family per value of the
    ``family`` columns (those the frame has; module docstring)."""
    frame = frame.copy()
    keys = [c for c in family if c in frame.columns]
    for p, adjusted in columns.items():
        frame[adjusted] = pd.Series(np.nan, index=frame.index, dtype="float64")
        for _, part in frame.groupby(keys, dropna=False, sort=False):
            frame.loc[part.index, adjusted] = holm(part[p].to_numpy(dtype=float))
    return frame
