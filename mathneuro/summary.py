"""A study's own numbers in the README's layout, printed from its tables.

``python -m mathneuro.summary results/tables/toy`` prints, as Markdown, the pruning table at each K
(the unedited model, then every method and control: the set's size and the mean accuracy over the
repeats on every task), the scaling and data-efficiency tables in the same layout, and the
consistency of two identifications, whole and by layer and module type. Every number comes from
the study's ``*_summary.parquet`` tables (means over the repeats), so a reader compares their own
run with the README's like with like: training drifts across machines, and the README's tables
are one machine's run.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from mathneuro.analyses import NO_SET, NO_SET_LABEL, PLANTED, PLANTED_LABELS
from mathneuro.evaluate import BPB_PREFIX, is_bpb_task, is_generated_task
from mathneuro.methods import METHODS, SPECIFIC, describe, set_name
from mathneuro.tasks import project_task_names

# A task's metric, first found: exact match of the toy and GSM8K, accuracy of multiple choice.
METRICS = ("exact_match,none", "exact_match,strict-match", "exact_match,flexible-extract", "acc,none")
TASK_LABELS = {"toy_math": "math", "toy_math_reworded": "reworded math", "toy_reading": "reading",
               "toy_reading_numbers": "reading: numbers", "toy_reading_words": "reading: words",
               "toy_facts": "facts", "toy_facts_numbers": "facts: numbers", "toy_facts_words": "facts: words",
               "toy_math_add": "addition", "toy_math_sub": "subtraction", "toy_math_mul": "multiplication"}


def pick_metric(metrics: Sequence[str]) -> str:
    """The metric a task is reported by: the first of METRICS it has, else its first by name."""
    return next((m for m in METRICS if m in metrics), sorted(metrics)[0])


PROPORTIONS = ("exact_match", "acc")  # metrics printed in percent; others (bits_per_byte) as they are
EVIDENCE = ("points, or bits per byte; 95 % interval over the test items, repeats pooled; * paired test "
            "significant after Holm's correction, p < 0.05; '− random': the set's value minus its same-count "
            "baseline's")


def headline_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """The rows of each task's reported metric (``pick_metric``), and that metric per task."""
    metric = {t: pick_metric(list(rows.loc[rows["task"] == t, "metric"].unique())) for t in rows["task"].unique()}
    return rows[rows["metric"] == rows["task"].map(metric)], metric


def task_label(task: str) -> str:
    if is_bpb_task(task):
        return f"{task[len(BPB_PREFIX):]} bits/byte"
    return TASK_LABELS.get(task, task)


def percent(value: float, digits: int = 1) -> str:
    return "" if pd.isna(value) else f"{100 * value:.{digits}f}"


def formatted(value: float, metric: str) -> str:
    """A proportion in percent (one decimal), any other measure with three decimals."""
    if metric.split(",")[0] in PROPORTIONS:
        return percent(value)
    return "" if pd.isna(value) else f"{value:.3f}"


def columns(tasks: Sequence[str]) -> dict[str, list[str]]:
    """Label -> tasks of each column: lm-eval subtasks of one family (``mmlu_anatomy``,
    ``mmlu_nutrition``...) as their unweighted mean, "mmlu (mean of 2)", when the study lists two
    or more of them; every other task alone, the README's toy tasks first."""
    order = {t: i for i, t in enumerate(TASK_LABELS)}
    tasks = sorted(dict.fromkeys(tasks), key=lambda t: (order.get(_bare(t)[0], len(order)), t))
    own = project_task_names()  # the toy's, EGSM: no lm-eval family

    def family(task: str) -> str | None:  # "mmlu" for mmlu_anatomy; a suite-qualified task's own suite's
        bare, suite = _bare(task)
        if "_" not in bare or is_generated_task(bare) or bare in own:
            return None
        return bare.split("_", 1)[0] + suite

    families: dict[str, list[str]] = {}
    for task in tasks:
        if family(task) is not None:
            families.setdefault(family(task), []).append(task)
    out: dict[str, list[str]] = {}
    for task in tasks:
        members = families.get(family(task), [])
        if len(members) > 1:
            out.setdefault(f"{family(task)} (mean of {len(members)})", members)
        else:
            bare, suite = _bare(task)
            out[task_label(bare) + suite] = [task]
    return out


def _bare(task: str) -> tuple[str, str]:
    """A task's name and the " (suite)" that :func:`suite_qualified` appended to it ("" if none)."""
    if task.endswith(")") and " (" in task:
        name, suite = task.rsplit(" (", 1)
        return name, f" ({suite}"
    return task, ""


def set_label(method: str, control: str, skill: str, k: str, k_fraction: float) -> str:
    """How the README names a set: 'MathNeuro (math − reading)', 'Wanda (top 5% on math)'..."""
    if method == NO_SET:
        return NO_SET_LABEL
    if method in PLANTED_LABELS:
        return PLANTED_LABELS[method]
    return describe(method, skill=skill, control=control, k_fraction=k_fraction)


def _ordered(pairs) -> list[tuple[str, str]]:
    rank = {m: i for i, m in enumerate(METHODS)}
    return sorted(pairs, key=lambda mc: (rank.get(mc[0], len(rank)), mc[0], mc[1]))


def variant_table(summary: pd.DataFrame, share: pd.DataFrame | None = None, *, k: str, edit: str,
                  n_samples: int | None = None, skill: str = "math", hidden_size: int | None = None,
                  base_row: bool = True) -> pd.DataFrame:
    """One row per set (method, control) of an edit analysis' summary at one K, edit and sample
    count: its size and the mean value per column (``columns``; proportions in percent, other
    measures as they are; strings, as printed); first the
    unedited model's row (``base_row``). ``share``: the share summary, for the sizes; with
    ``hidden_size``, LAPE's size also counts its neurons (d_model weights each)."""
    rows = summary[(summary["k"] == k) & (summary["edit"] == edit)]
    if n_samples is None:
        n_samples = int(rows["n_samples"].max())
    rows = rows[rows["n_samples"] == n_samples]
    if rows.empty:
        raise ValueError(f"no rows at k={k!r}, edit={edit!r}, n_samples={n_samples}")
    shown = columns(rows["task"])
    rows, metric = headline_rows(rows)

    def cells(values: pd.Series) -> list[str]:  # task -> value; a family's mean of its tasks
        return [formatted(values.reindex(tasks).mean(skipna=False), metric[tasks[0]]) for tasks in shown.values()]

    out = []
    if base_row:
        out.append(["none", "", *cells(rows.drop_duplicates("task").set_index("task")["base_value_mean"])])
    k_fraction = float(rows["k_fraction"].iloc[0])
    for method, control in _ordered(rows[["method", "control"]].drop_duplicates().itertuples(index=False)):
        mine = rows[(rows["method"] == method) & (rows["control"] == control)].set_index("task")["value_mean"]
        out.append([set_label(method, control, skill, k, k_fraction),
                    set_size(share, method, control, k, n_samples, hidden_size), *cells(mine)])
    return pd.DataFrame(out, columns=["set", "size", *shown])


MARK = "*"  # a change significant by the paired test, Holm-adjusted over the set and edit's tasks (evidence.FAMILY)


def interval(change: float, low: float, high: float, significant, metric: str) -> str:
    """'−83.8 [−88.3, −78.8]*': a change with its 95 % interval (proportions in points, other
    measures with three decimals) and MARK where it is significant; '' when there is none."""
    if pd.isna(change):
        return ""
    show = (lambda v: f"{100 * v:+.1f}") if metric.split(",")[0] in PROPORTIONS else (lambda v: f"{v:+.3f}")
    bounds = "" if pd.isna(low) or pd.isna(high) else f" [{show(low)}, {show(high)}]"
    return f"{show(change)}{bounds}{MARK if pd.notna(significant) and bool(significant) else ''}".replace("-", "−")


def change_table(summary: pd.DataFrame, *, k: str, edit: str, n_samples: int | None = None,
                 skill: str = "math") -> pd.DataFrame:
    """The paired evidence of an edit analysis' summary at one K, edit and sample count: per set,
    its change from the unedited model on every task with the 95 % interval (repeats pooled) and
    MARK where significant; below a set with a same-count baseline, its value minus the baseline's
    ('− random'), the same way. A family of subtasks shows its tasks' mean change, no interval."""
    rows = summary[(summary["k"] == k) & (summary["edit"] == edit)]
    if n_samples is None:
        n_samples = int(rows["n_samples"].max())
    rows = rows[rows["n_samples"] == n_samples]
    if rows.empty or "change_low" not in rows:
        raise ValueError(f"no paired statistics at k={k!r}, edit={edit!r}, n_samples={n_samples}")
    shown = columns(rows["task"])
    rows, metric = headline_rows(rows)
    k_fraction = float(rows["k_fraction"].iloc[0])

    def cells(part: pd.DataFrame, prefix: str) -> list[str]:
        part = part.set_index("task")
        out = []
        for tasks in shown.values():
            if len(tasks) > 1:
                out.append(interval(part[f"{prefix}change" if prefix else "change_mean"].reindex(tasks).mean(skipna=False),
                                    float("nan"), float("nan"), None, metric[tasks[0]]))
                continue
            task = tasks[0]
            if task not in part.index:
                out.append("")
                continue
            row = part.loc[task]
            change = row["baseline_change"] if prefix else row["change_mean"]
            low, high = (row["baseline_low"], row["baseline_high"]) if prefix else (row["change_low"], row["change_high"])
            out.append(interval(change, low, high, row["baseline_significant" if prefix else "significant"], metric[task]))
        return out

    out = []
    for method, control in _ordered(rows[["method", "control"]].drop_duplicates().itertuples(index=False)):
        mine = rows[(rows["method"] == method) & (rows["control"] == control)]
        out.append([set_label(method, control, skill, k, k_fraction), *cells(mine, "")])
        baseline = mine["baseline"].dropna()
        if len(baseline):
            out.append([f"  − {METHODS[baseline.iloc[0]].label if baseline.iloc[0] in METHODS else baseline.iloc[0]}",
                        *cells(mine, "baseline_")])
    return pd.DataFrame(out, columns=["set", *shown])


def set_size(share: pd.DataFrame | None, method: str, control: str, k: str, n_samples: int,
             hidden_size: int | None = None) -> str:
    """'7,467 (1.52% of the matrices)': the set's mean size over the repeats, or '' unknown."""
    if share is None:
        return ""
    row = share[(share["method"] == method) & (share["control"] == control) & (share["k"] == k)
                & (share["n_samples"] == n_samples)]
    if row.empty:
        return ""
    selected, of_targets = float(row["selected_mean"].iloc[0]), float(row["share_of_targets_mean"].iloc[0])
    text = f"{selected:,.0f} ({100 * of_targets:.2f}% of the matrices"
    if method in METHODS and METHODS[method].neurons and hidden_size:
        text += f", {selected / hidden_size:g} neurons"
    return text + ")"


def consistency_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Jaccard / overlap rate of two independent identifications, per set and sample count: the
    skill-specific set against each control ("MathNeuro vs <control>") and each data set's own
    TopK set ("TopK(<data set>)")."""
    pivot = summary.pivot_table(index=["method", "control", "n_samples"], columns="metric", values="value_mean")
    out = pivot.reset_index()
    sets = [set_name(m, c) for m, c in zip(out["method"], out["control"])]
    return pd.DataFrame({"set": sets, "n": out["n_samples"].astype(int),
                         "Jaccard": out["jaccard"].map(lambda v: f"{v:.2f}"),
                         "overlap rate": out["overlap_rate"].map(lambda v: f"{v:.2f}")})


def agreement_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """Per method compared with the skill-specific set (SNIP's) and control, per K: the Jaccard of
    the two sets and, in brackets, the share of the skill-specific set found in the other (means
    over the repeats)."""
    summary = summary[summary["method_a"] == SPECIFIC]
    ks = list(dict.fromkeys(summary.sort_values("k_fraction")["k"]))
    k_fraction = summary.drop_duplicates("k").set_index("k")["k_fraction"]
    out = []
    for (other, control), rows in summary.groupby(["method_b", "control"], sort=False):
        cells = [f"{r['jaccard_mean'].iloc[0]:.2f} ({r['overlap_rate_mean'].iloc[0]:.2f})" if len(r := rows[rows["k"] == k])
                 else "" for k in ks]
        out.append([f"{METHODS[SPECIFIC].label} and {METHODS[other].label if other in METHODS else other} ({control})",
                    *cells])
    return pd.DataFrame(out, columns=["sets", *[f"K = {100 * float(k_fraction[k]):g}%" for k in ks]])


def localization_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """Per planted model and set, per K: recall / precision of the set against the planted set
    over every matrix (means over the repeats), and a random set's (recall = its share of the
    entries, precision = the planted set's share)."""
    from mathneuro.tables import ALL_MODULES

    summary = summary[summary["module"] == ALL_MODULES]
    ks = list(dict.fromkeys(summary.sort_values("k_fraction")["k"]))
    k_fraction = summary.drop_duplicates("k").set_index("k")["k_fraction"]
    out = []
    for model, part in summary.groupby("model", sort=True):
        for (method, control), rows in part.groupby(["method", "control"], sort=False):
            cells = [f"{r['recall_mean'].iloc[0]:.2f} / {r['precision_mean'].iloc[0]:.2f}"
                     if len(r := rows[rows["k"] == k]) else "" for k in ks]
            out.append([model, set_name(method, control), *cells])
        chance = part["chance_mean"].iloc[0]
        out.append([model, "a random set of K of each matrix", *[f"{float(k_fraction[k]):.2f} / {chance:.2f}" for k in ks]])
    return pd.DataFrame(out, columns=["planted model", "set", *[f"K = {100 * float(k_fraction[k]):g}%" for k in ks]])


def share_rows(share: pd.DataFrame) -> pd.DataFrame:
    """Each set's size at every K: entries, share of the scored matrices, share of all parameters."""
    rows = share[share["n_samples"] == share["n_samples"].max()].sort_values("k_fraction")
    out = []
    for method, control in _ordered(rows[["method", "control"]].drop_duplicates().itertuples(index=False)):
        for row in rows[(rows["method"] == method) & (rows["control"] == control)].itertuples():
            out.append([method, control, f"{100 * row.k_fraction:g}%", f"{row.selected_mean:,.0f}",
                        f"{100 * row.share_of_targets_mean:.2f}", f"{100 * row.share_of_model_mean:.2f}"])
    return pd.DataFrame(out, columns=["method", "control", "K", "entries", "% of the matrices", "% of all parameters"])


def layer_rows(layers: pd.DataFrame, method: str, k: str, bins: int = 6) -> pd.DataFrame:
    """Where one method's sets lie at K ``k``: per group of consecutive layers and per module type,
    the share of the set there and the share of those matrices it selects (means over repeats and
    controls; the largest sample count)."""
    rows = layers[(layers["method"] == method) & (layers["k"] == k)]
    rows = rows[rows["n_samples"] == rows["n_samples"].max()]
    if rows.empty:
        raise ValueError(f"no {method} sets at k={k!r} in the layers table")
    controls = rows["control"].nunique()

    def row(label: str, part: pd.DataFrame) -> list[str]:
        return [label, f"{100 * part['share_of_selected_mean'].sum() / controls:.1f}",
                f"{100 * part['selected_mean'].sum() / part['numel_mean'].sum():.2f}"]

    out = [row(label, rows[which]) for label, which in layer_groups(rows["layer"], bins)]
    out += [row(str(module), part) for module, part in rows.groupby("module", sort=True)]
    return pd.DataFrame(out, columns=["where", "% of the set", "% of those matrices selected"])


def layer_groups(layer: pd.Series, bins: int) -> list[tuple[str, pd.Series]]:
    """The layers 0..max split into ``bins`` runs of consecutive layers ("layers 0–3", "layer 4"):
    each run's label and which entries of ``layer`` fall in it (none with no layer)."""
    layer = pd.to_numeric(layer, errors="coerce").astype("float64")
    count = int(layer.max()) + 1
    edges = [round(i * count / bins) for i in range(bins + 1)]
    return [(f"layers {lo}–{hi - 1}" if hi - lo > 1 else f"layer {lo}", (layer >= lo) & (layer < hi))
            for lo, hi in zip(edges, edges[1:]) if hi > lo]


def layer_overlap_rows(summary: pd.DataFrame, bins: int = 6) -> pd.DataFrame:
    """Where two independent identifications agree, at the largest sample count: one column per
    set ("MathNeuro vs <control>", "TopK(<data set>)"), one row for the whole model, each run of
    layers (``layer_groups``) and each module type, each cell "Jaccard (overlap rate)" of the
    matrices there pooled (summed intersections over summed unions and sizes, means over the
    seed pairs; 1.0 where both sets are empty, as ``mathneuro.masks.overlap``)."""
    rows = summary[summary["n_samples"] == summary["n_samples"].max()]
    if rows.empty:
        raise ValueError("no rows in the layer_overlap table")
    models = rows["model"].nunique()
    sets = sorted(set(rows[["model", "method", "control"]].itertuples(index=False, name=None)),
                  key=lambda s: (s[0], s[1] != SPECIFIC, s[1], s[2]))

    def cell(part: pd.DataFrame) -> str:
        inter, union, size = (part[f"{c}_mean"].sum() for c in ("intersection", "union", "size_a"))
        return f"{inter / union if union else 1.0:.2f} ({inter / size if size else 1.0:.2f})"

    everywhere = pd.Series(True, index=rows.index)
    groups = [("all", everywhere), *layer_groups(rows["layer"], bins)]
    groups += [(str(module), rows["module"] == module) for module in sorted(rows["module"].unique())]
    out = {"where": [label for label, _ in groups]}
    for model, method, control in sets:
        mine = (rows["model"] == model) & (rows["method"] == method) & (rows["control"] == control)
        name = set_name(method, control) + (
            f", {model}" if models > 1 else "")
        out[name] = [cell(rows[mine & which]) for _, which in groups]
    return pd.DataFrame(out)


def subskill_rows(summary: pd.DataFrame, k: str) -> pd.DataFrame:
    """The sub-skill matrix at K ``k``: one row per pruned sub-skill set, per evaluated task (a
    family as its mean) the mean change from the unedited model, proportions in points."""
    rows = summary[summary["k"] == k]
    if rows.empty:
        raise ValueError(f"no sub-skill rows at k={k!r}")
    rows, metric = headline_rows(rows)
    shown = columns(rows["task"])

    def cell(change: float, task: str) -> str:
        if pd.isna(change):
            return ""
        proportion = metric[task].split(",")[0] in PROPORTIONS
        return f"{100 * change:+.1f}" if proportion else f"{change:+.3f}"

    out = []
    for skill in dict.fromkeys(rows["skill"]):
        change = rows[rows["skill"] == skill].groupby("task")["change_mean"].mean()
        out.append([skill, *(cell(change.reindex(tasks).mean(skipna=False), tasks[0]) for tasks in shown.values())])
    return pd.DataFrame(out, columns=["pruned set", *shown])


def subskill_overlap_rows(summary: pd.DataFrame, k: str) -> pd.DataFrame:
    """The Jaccard of every pair of sub-skill sets at K ``k`` (mean over the repeats)."""
    rows = summary[summary["k"] == k]
    matrix = rows.pivot_table(index="skill_a", columns="skill_b", values="jaccard_mean", aggfunc="mean")
    skills = sorted(set(matrix.index) | set(matrix.columns))
    matrix = matrix.reindex(index=skills, columns=skills)
    out = matrix.map(lambda v: "" if pd.isna(v) else f"{v:.2f}").reset_index(names="set")
    out.columns.name = None
    return out


def markdown(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _read(folder: Path, name: str) -> pd.DataFrame | None:
    path = folder / f"{name}_summary.parquet"
    return suite_qualified(pd.read_parquet(path)) if path.is_file() else None


def suite_qualified(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with a task evaluated in several suites (an MMLU subject alone and inside the
    ``mmlu`` group) named ``task (suite)`` in each: one column per evaluation, since limits and
    few-shot settings are the suite's and its values may differ."""
    if not {"task", "suite"} <= set(table.columns):
        return table
    suites = table.groupby("task")["suite"].nunique()
    several = table["task"].isin(suites[suites > 1].index)
    if not several.any():
        return table
    table = table.copy()
    table.loc[several, "task"] = table.loc[several, "task"] + " (" + table.loc[several, "suite"] + ")"
    return table


def _hidden_size(folder: Path, model: str) -> int | None:
    """The model's d_model, from the checkpoint the workflow built (results/models/<model>)."""
    config = folder.parent.parent / "models" / model / "config.json"
    try:
        return int(json.loads(config.read_text())["hidden_size"])
    except (OSError, ValueError, KeyError):
        return None


EDIT_TABLES = ("pruning", "scaling", "finetuning", "data_efficiency", "subskills")
LIBRARY_LABELS = {"torch": "torch", "transformers": "transformers", "lm_eval": "lm-eval", "snakemake": "Snakemake"}


def versions_text(tables: Sequence[pd.DataFrame | None], folder: Path | str = "results") -> str:
    """Which versions made the evaluations behind ``tables`` (summaries whose rows carry
    :data:`mathneuro.provenance.VERSION_COLUMNS`, a repeat's several joined with ", "): one
    sentence when every row agrees, a warning naming each value and its rows' count when they do
    not; "" for tables that record none (made before rows carried versions)."""
    from mathneuro.provenance import VERSION_COLUMNS

    rows = [t for t in tables if t is not None and len(t) and set(VERSION_COLUMNS) <= set(t.columns)]
    if not rows:
        return ""
    frame = pd.concat([t[VERSION_COLUMNS] for t in rows], ignore_index=True)
    found = {column: frame[column].dropna().str.split(", ").explode().value_counts() for column in VERSION_COLUMNS}
    if all(counts.empty for counts in found.values()):
        return ""
    labels = {"code": "code", **LIBRARY_LABELS}
    mixed = {column: counts for column, counts in found.items() if len(counts) > 1}
    if not mixed:
        made = ", ".join(f"{labels[c]} {counts.index[0]}" for c, counts in found.items() if len(counts))
        return f"Made by {made}."
    named = "; ".join(f"{labels[c]} " + ", ".join(f"{value} ({n} row{'s' * (n != 1)})" for value, n in counts.items())
                      for c, counts in mixed.items())
    return (f"**Mixed versions**: this study's rows were made by different versions ({named}); compare like "
            f"with like (`python -m mathneuro.provenance --rows {folder}` counts each table's rows of other "
            "code, docs/caching.md says how to rerun them).")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return cpu


def report(folder: str | Path, skill: str | None = None) -> str:
    """Every section, as Markdown, of the study whose tables are in ``folder``; a study of several
    models gets them one after the other, each under its heading."""
    folder = Path(folder)
    if _read(folder, "pruning") is None:
        raise FileNotFoundError(f"{folder}/pruning_summary.parquet: not a study's tables folder")
    models = sorted({str(m) for name in ("pruning", "share") if (t := _read(folder, name)) is not None
                     for m in t["model"].dropna()})
    if len(models) <= 1:
        return _model_report(folder, skill, None)
    return "\n".join(f"## Model {model}\n\n{_model_report(folder, skill, model)}" for model in models)


def _model_report(folder: Path, skill: str | None, only: str | None) -> str:
    """:func:`report`'s sections for one model's rows (``only``; None: every row)."""

    def read(name: str) -> pd.DataFrame | None:
        table = _read(folder, name)
        return table if table is None or only is None or "model" not in table else table[table["model"] == only]

    pruning, share = read("pruning"), read("share")
    if skill is None:  # the study's skill labels its rows (tables of older runs: the tasks' name)
        labelled = pruning["skill"].dropna() if "skill" in pruning else pd.Series(dtype=str)
        skill = str(labelled.iloc[0]) if len(labelled) else "math"
    labelled = [t["model"] for t in (pruning, share) if t is not None and len(t)]
    model = str(labelled[0].iloc[0]) if labelled else "(no results)"
    hidden = _hidden_size(folder, model)
    written = datetime.fromtimestamp((folder / "pruning_summary.parquet").stat().st_mtime, timezone.utc)
    repeats = int(pruning["n_repeats"].max()) if len(pruning) else 0
    averaged = f"means of {repeats} repeats" if repeats > 1 else "one repeat"
    parts = [f"Tables: `{folder}` (model {model}), written {written:%Y-%m-%d %H:%M} UTC; printed on "
             f"{_machine()}. Values: % of the test items (bits per byte as they are: lower is better), "
             f"{averaged}."]
    made_by = versions_text([read(name) for name in EDIT_TABLES], folder)
    if made_by:
        parts[0] += f" {made_by}"

    def ks(table):
        return list(dict.fromkeys(table.sort_values("k_fraction")["k"]))

    def k_text(table, k):
        if k == NO_SET:
            return NO_SET_LABEL
        if k == PLANTED:
            return "the planted set S and random sets of its count in every matrix"
        return f"K = {100 * float(table.loc[table['k'] == k, 'k_fraction'].iloc[0]):g}% per matrix"

    for label, table in (("Pruned", pruning), ("Scaled", read("scaling")),
                         ("Fine-tuned", read("finetuning"))):
        if table is None or not len(table):
            continue
        for k in ks(table):
            for edit in dict.fromkeys(table.loc[table["k"] == k, "edit"]):
                frame = variant_table(table, share, k=k, edit=edit, skill=skill, hidden_size=hidden)
                parts.append(f"{label} ({edit}), {k_text(table, k)}:\n\n{markdown(frame)}")
                if "change_low" in table:
                    parts.append(f"{label} ({edit}), {k_text(table, k)}: change from the unedited model ({EVIDENCE})"
                                 f"\n\n{markdown(change_table(table, k=k, edit=edit, skill=skill))}")
    efficiency = read("data_efficiency")
    if efficiency is not None and len(efficiency):
        for k in ks(efficiency):
            for edit in dict.fromkeys(efficiency["edit"]):
                frames = []
                for n in sorted(efficiency["n_samples"].dropna().unique()):
                    frame = variant_table(efficiency, share, k=k, edit=edit, n_samples=int(n), skill=skill,
                                          base_row=not frames)
                    frame.insert(0, "n", [""] * (not frames) + [str(int(n))] * (len(frame) - (not frames)))
                    frames.append(frame)
                table = pd.concat(frames, ignore_index=True)
                parts.append(f"Data efficiency ({edit}), {k_text(efficiency, k)}, sets found from n samples of each data set:"
                             f"\n\n{markdown(table)}")
    if share is not None and len(share):
        parts.append(f"Size of the sets:\n\n{markdown(share_rows(share))}")
    layers = read("layers")
    if layers is not None and len(layers) and (layers["method"] == SPECIFIC).any():
        specific = layers[layers["method"] == SPECIFIC]
        used = ks(specific)
        k = used[len(used) // 2]  # the median K, as the layers figure
        parts.append(f"Where the {METHODS[SPECIFIC].label} sets lie, {k_text(specific, k)}:\n\n"
                     f"{markdown(layer_rows(layers, SPECIFIC, k))}")
    consistency = read("consistency")
    if consistency is not None and len(consistency):
        parts.append(f"Consistency of two identifications:\n\n{markdown(consistency_table(consistency))}")
    agreement = read("agreement")
    if agreement is not None and len(agreement):
        parts.append(f"How far other methods' sets agree with the {METHODS[SPECIFIC].label} sets from the same draws, "
                     f"Jaccard (share of the {METHODS[SPECIFIC].label} set found in the other):"
                     f"\n\n{markdown(agreement_rows(agreement))}")
    localization = read("localization")
    if localization is not None and len(localization):
        parts.append("Localization on planted models: recall / precision of each set against the set its skill was "
                     f"planted in, over every matrix (mean over the repeats):\n\n{markdown(localization_rows(localization))}")
    layer_overlap = read("layer_overlap")
    if layer_overlap is not None and len(layer_overlap):
        n = int(layer_overlap["n_samples"].max())
        parts.append(f"Where two identifications agree (n = {n}), Jaccard (overlap rate) of the matrices in each "
                     f"row:\n\n{markdown(layer_overlap_rows(layer_overlap))}")
    subskills, overlaps = read("subskills"), read("subskill_overlap")
    if subskills is not None and len(subskills):
        for k in ks(subskills):
            parts.append(f"Sub-skills, each set pruned ({', '.join(dict.fromkeys(subskills['edit']))}), "
                         f"{k_text(subskills, k)}: change from the unedited model (points)\n\n"
                         f"{markdown(subskill_rows(subskills, k))}")
            if overlaps is not None and len(overlaps) and (overlaps["k"] == k).any():
                parts.append(f"Sub-skills' sets against the controls alone, Jaccard of each pair, {k_text(subskills, k)}:"
                             f"\n\n{markdown(subskill_overlap_rows(overlaps, k))}")
    return "\n\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mathneuro.summary", description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", help="a study's tables folder, e.g. results/tables/toy")
    parser.add_argument("--skill", default=None, help="the skill's data set label (default: the one the tables name; math for tables that name none)")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(report(args.tables, args.skill))
    except (FileNotFoundError, ValueError) as err:
        print(f"mathneuro.summary: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
