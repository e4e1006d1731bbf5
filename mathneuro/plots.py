"""The figures, each drawn from one of the tidy per-repeat tables (``FIGURES``).

Conventions shared by every figure: a method has one colour everywhere (``METHODS`` order), a
control set one line style; curves show the mean over repeats with the repeats' range as a band;
the edit figures (pruning, data efficiency, factor sweep, scaling) add the 95 % interval of the
paired change from the unedited model (the summary's ``change_low``/``change_high``,
mathneuro.evidence) as error bars, and mark what differs from the unedited model by Holm's test:
a filled point (a hollow one does not), a star over a bar; the unedited model is a dashed black
line; K is on a log axis (the paper's grid spans 0.01% to 15%); legends sit below the panels,
never over data; one row of panels per model.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mathneuro.analyses import FIGURES, NO_SET, NO_SET_LABEL, PLANTED_LABELS  # noqa: E402
from mathneuro.methods import METHODS, NO_CONTROL, SPECIFIC, set_name  # noqa: E402

COLOURS = dict(zip(METHODS, plt.get_cmap("tab10").colors))
STYLES = ["-", "--", ":", "-."]
# Sets whose spread over layers says something: random copies MathNeuro's counts per matrix, and a
# per-matrix TopK set (Wanda) holds K of every matrix by construction.
PLACED_METHODS = [m for m in METHODS if not METHODS[m].same_count_as and not METHODS[m].top_k_set]


def _headline_tasks(table: pd.DataFrame) -> list[str]:
    """The tasks to draw: a group's score (``mmlu``) stands for its subtasks (``mmlu_anatomy``...),
    which stay in the tables. A group is a task without a sample count (lm-eval counts the
    documents of leaf tasks only), so ``toy_math_reworded`` is no subtask of ``toy_math``."""
    counted = table["n"].notna() if "n" in table else pd.Series(True, index=table.index)
    groups = set(table.loc[~counted, "task"]) - set(table.loc[counted, "task"])
    return [t for t in sorted(set(table["task"])) if not any(t.startswith(g + "_") for g in groups - {t})]


def _label(method: str) -> str:
    if method == NO_SET:
        return NO_SET_LABEL
    if method in PLANTED_LABELS:
        return PLANTED_LABELS[method]
    return METHODS[method].label if method in METHODS else method


def _panels(rows: list, columns: list, width: float = 3.6, height: float = 3.0):
    fig, axes = plt.subplots(len(rows), len(columns), figsize=(width * len(columns), height * len(rows) + 0.8),
                             squeeze=False)
    return fig, axes


def _save(fig, path: str | Path, handles=None, labels=None) -> None:
    if handles:
        columns = max(1, min(len(labels), int(fig.get_figwidth() // 2.6)))
        rows = (len(labels) + columns - 1) // columns
        fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.2 * rows / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _spread(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """Mean and range of ``column`` over repeats, per ``keys``."""
    return frame.groupby(keys, dropna=False, as_index=False)[column].agg(mean="mean", low="min", high="max")


def _legend(axes) -> tuple[list, list]:
    seen = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def _log_ticks(ax, values: pd.Series, label=str) -> None:
    """Log x axis with a tick at each value of the study (K, sample counts), labelled by ``label``."""
    ticks = sorted(values.dropna().unique())
    ax.set_xscale("log")
    if ticks:
        ax.set_xticks(ticks, [label(t) for t in ticks], fontsize=7)
        ax.minorticks_off()


def _k_axis(ax, percents: pd.Series) -> None:
    """Log axis with a tick at each K of the study, in percent."""
    _log_ticks(ax, percents, lambda k: f"{k:g}%")


def _accuracy_axis(ax, values: pd.Series) -> None:
    """A share (accuracy) from 0 to 1, so that a point lost reads as small as it is."""
    if len(values) and values.between(0, 1).all():
        ax.set_ylim(-0.02, 1.02)


def _empty(path: str | Path, what: str) -> None:
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, f"no {what} in this study", ha="center", va="center")
    _save(fig, path)


def _intervals(summary: pd.DataFrame | None, keys: list[str], x: str) -> pd.DataFrame | None:
    """Per set and ``x`` (``keys``, ``x``, model, task, metric): the pooled value (``mean``), its
    95 % interval (the unedited value plus the paired change's interval) and whether the change is
    significant; None without a summary that holds them."""
    if summary is None or summary.empty or "change_low" not in summary:
        return None
    rows = summary.assign(mean=summary["value_mean"], low=summary["base_value_mean"] + summary["change_low"],
                          high=summary["base_value_mean"] + summary["change_high"],
                          significant=summary["significant"].fillna(False).astype(bool))
    return rows[["model", "task", "metric", *keys, x, "mean", "low", "high", "significant"]]


def _curves(table: pd.DataFrame, path: str | Path, *, x: str, keys: list[str], x_axis, xlabel: str,
            ylabel: str, unedited: str = "unedited", summary: pd.DataFrame | None = None) -> None:
    """Per model (rows) and task (columns): accuracy against column ``x`` for every set, named by
    ``keys`` (method, control, then those that join the label where they vary), with the repeats'
    range as a band and the unedited model dashed; ``x_axis(ax, values)`` lays out the x axis.
    With the table's ``summary``: the pooled 95 % interval as error bars, points filled where the
    change from the unedited model is significant (Holm), hollow where it is not."""
    models, tasks = sorted(table["model"].unique()), _headline_tasks(table)
    intervals = _intervals(summary, keys, x)
    controls = sorted(c for c in table["control"].dropna().unique() if c != NO_CONTROL)
    style = {c: STYLES[i % len(STYLES)] for i, c in enumerate(controls)} | {NO_CONTROL: "-"}
    fig, axes = _panels(models, tasks)
    for row, model in enumerate(models):
        for col, task in enumerate(tasks):
            ax = axes[row][col]
            rows = table[(table["model"] == model) & (table["task"] == task)]
            shown = [key for key in keys[2:] if rows[key].nunique() > 1]
            for values, group in rows.groupby(keys, dropna=False):
                variant = dict(zip(keys, values))
                method, control = variant["method"], variant["control"]
                label = set_name(method, control) + "".join(
                    f" {variant[key]}" for key in shown)
                stats = _spread(group, [x], "value").sort_values(x)
                colour = COLOURS.get(method)
                ax.plot(stats[x], stats["mean"], color=colour, ls=style.get(control, "-"), label=label)
                ax.fill_between(stats[x], stats["low"], stats["high"], color=colour, alpha=0.15, lw=0)
                pooled = None if intervals is None else intervals[
                    (intervals["model"] == model) & (intervals["task"] == task)
                    & (intervals["metric"] == group["metric"].iloc[0])
                    & np.logical_and.reduce([intervals[k].eq(variant[k]).fillna(pd.isna(variant[k])) for k in keys])]
                if pooled is None or pooled.empty:
                    ax.plot(stats[x], stats["mean"], "o", ms=3, color=colour)
                    continue
                pooled = pooled.sort_values(x)
                ax.errorbar(pooled[x], pooled["mean"], yerr=[pooled["mean"] - pooled["low"], pooled["high"] - pooled["mean"]],
                            fmt="none", ecolor=colour, elinewidth=1, capsize=2)
                for significant, points in pooled.groupby("significant"):
                    ax.plot(points[x], points["mean"], "o", ms=4, color=colour,
                            markerfacecolor=colour if significant else "white")
            if len(rows):
                ax.axhline(rows["base_value"].iloc[0], color="black", ls="--", lw=1, label=unedited)
                _accuracy_axis(ax, rows["value"])
            x_axis(ax, rows[x])
            metric = rows["metric"].iloc[0] if len(rows) else ""
            ax.set(title=f"{model}: {task}" if len(models) > 1 else task, xlabel=xlabel,
                   ylabel=f"{ylabel}\n({metric})")
    _save(fig, path, *_legend(axes))


def _k_percent(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    return None if frame is None else frame.assign(k_percent=frame["k_fraction"] * 100)


def plot_pruning(table: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Accuracy after pruning against K: MathNeuro against its baselines, per task."""
    if table.empty:
        return _empty(path, "results")
    _curves(_k_percent(table), path, x="k_percent", keys=["method", "control", "edit"], x_axis=_k_axis,
            xlabel="K (% of each matrix, log)", ylabel="accuracy after pruning", summary=_k_percent(summary))


def plot_finetuning(table: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Change in accuracy after fine-tuning (points), per task: one bar per set and fine-tuning
    edit (a set's entries trained, or every parameter), drawn as the scaling figure is."""
    if table.empty:
        return _empty(path, "fine-tuning results (finetuning.edits is empty)")
    plot_scaling(table, path, summary)


def plot_scaling(table: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Change in accuracy after scaling (points), per task: one bar per set and factor, the mean
    over repeats, each repeat a dot; with the ``summary``, the pooled change's 95 % interval as an
    error bar and a star over a change significant by Holm's test."""
    if table.empty:
        return _empty(path, "scaling results")
    models, tasks = sorted(table["model"].unique()), _headline_tasks(table)
    table = table.assign(change=table["change"] * 100)
    pooled = None if summary is None or "change_low" not in summary else summary.assign(
        low=summary["change_low"] * 100, high=summary["change_high"] * 100)
    fig, axes = _panels(models, tasks)
    variants = table[["method", "control", "k", "k_fraction", "edit"]].drop_duplicates().sort_values(
        ["k_fraction", "edit", "method", "control"])
    for row, model in enumerate(models):
        for col, task in enumerate(tasks):
            ax = axes[row][col]
            rows = table[(table["model"] == model) & (table["task"] == task)]
            stats = _spread(rows, ["method", "control", "k", "edit"], "change")
            for x, variant in enumerate(variants.itertuples(index=False)):
                hit = stats[(stats["method"] == variant.method) & (stats["control"] == variant.control)
                            & (stats["k"] == variant.k) & (stats["edit"] == variant.edit)]
                if hit.empty:
                    continue
                mean = hit["mean"].iloc[0]
                colour = COLOURS.get(variant.method)
                ax.bar(x, mean, color=colour, alpha=0.8, label=_label(variant.method))
                repeats = rows[(rows["method"] == variant.method) & (rows["control"] == variant.control)
                               & (rows["k"] == variant.k) & (rows["edit"] == variant.edit)]["change"]
                ax.plot([x] * len(repeats), repeats, ".", color="black", ms=3)
                interval = None if pooled is None else pooled[
                    (pooled["model"] == model) & (pooled["task"] == task) & (pooled["metric"] == rows["metric"].iloc[0])
                    & (pooled["method"] == variant.method) & (pooled["control"] == variant.control)
                    & (pooled["k"] == variant.k) & (pooled["edit"] == variant.edit)]
                if interval is not None and len(interval):
                    low, high, significant = interval[["low", "high", "significant"]].iloc[0]
                    ax.errorbar(x, mean, yerr=[[mean - low], [high - mean]], fmt="none", ecolor="black", capsize=3)
                    if pd.notna(significant) and bool(significant):
                        ax.annotate("*", (x, high if mean >= 0 else low), ha="center",
                                    va="bottom" if mean >= 0 else "top", fontsize=11)
            ax.axhline(0, color="black", ls="--", lw=1)
            varying = [c for c in ("edit", "k", "control") if variants[c].nunique() > 1] or ["edit"]
            ax.set_xticks(range(len(variants)), [" ".join(str(getattr(v, c)) for c in varying)
                                                 for v in variants.itertuples()], fontsize=7, rotation=45, ha="right")
            metric = rows["metric"].iloc[0] if len(rows) else ""
            ax.set(title=f"{model}: {task}" if len(models) > 1 else task, ylabel=f"change (points)\n({metric})")
    _save(fig, path, *_legend(axes))


def plot_consistency(table: pd.DataFrame, path: str | Path) -> None:
    """Overlap of two independent identifications against the number of samples (log): the
    skill-specific sets against each control, and each data set's own TopK set (grey)."""
    if table.empty:
        return _empty(path, "consistency results")
    models, metrics = sorted(table["model"].unique()), ["overlap_rate", "jaccard"]
    fig, axes = _panels(models, metrics)
    for row, model in enumerate(models):
        for col, metric in enumerate(metrics):
            ax = axes[row][col]
            rows = table[(table["model"] == model) & (table["metric"] == metric)]
            for i, ((method, control), group) in enumerate(rows.groupby(["method", "control"])):
                colour = COLOURS[SPECIFIC] if method == SPECIFIC else "0.35"
                label = set_name(method, control)
                stats = _spread(group, ["n_samples"], "value").sort_values("n_samples")
                ax.plot(stats["n_samples"], stats["mean"], marker="o", color=colour,
                        ls=STYLES[i % len(STYLES)], label=label)
                ax.fill_between(stats["n_samples"], stats["low"], stats["high"], color=colour, alpha=0.15)
            _log_ticks(ax, rows["n_samples"])
            ax.set(ylim=(0, 1.02), xlabel="samples per identification (log)", ylabel=metric.replace("_", " "),
                   title=model if len(models) > 1 else metric.replace("_", " "))
    _save(fig, path, *_legend(axes))


def plot_agreement(table: pd.DataFrame, path: str | Path) -> None:
    """How far two methods' sets from the same draws agree (SNIP's and MathNeuro's) against K
    (log): the Jaccard, and the share of each set found in the other (mean over the seeds, their
    range as a band), one line per pair and control."""
    if table.empty:
        return _empty(path, "agreement of two methods' sets (methods has no SNIP set)")
    table = table.assign(k_percent=table["k_fraction"] * 100)
    models, measures = sorted(table["model"].unique()), ["jaccard", "overlap_rate"]
    fig, axes = _panels(models, measures)
    for row, model in enumerate(models):
        for col, measure in enumerate(measures):
            ax = axes[row][col]
            rows = table[table["model"] == model]
            if measure == "jaccard":  # symmetric: one direction of each pair
                rows = rows.drop_duplicates(["method_a", "method_b", "control", "seed", "k"]).loc[
                    lambda r: r["method_a"] < r["method_b"]]
            for i, ((a, b, control), group) in enumerate(rows.groupby(["method_a", "method_b", "control"])):
                stats = _spread(group, ["k_percent"], measure).sort_values("k_percent")
                label = f"{_label(a)} ∩ {_label(b)} ({control})" if measure == "jaccard" else \
                    f"of {_label(a)}'s set in {_label(b)}'s ({control})"
                ax.plot(stats["k_percent"], stats["mean"], marker="o", color=COLOURS.get(b if measure == "jaccard"
                                                                                        else a),
                        ls=STYLES[i % len(STYLES)], label=label)
                ax.fill_between(stats["k_percent"], stats["low"], stats["high"], color=COLOURS.get(a), alpha=0.15)
            _k_axis(ax, rows["k_percent"])
            ax.set(ylim=(0, 1.02), xlabel="K (% of each matrix, log)", ylabel=measure.replace("_", " "),
                   title=model if len(models) > 1 else measure.replace("_", " "))
    _save(fig, path, *_legend(axes))


def plot_layer_overlap(table: pd.DataFrame, path: str | Path) -> None:
    """Where two independent identifications agree: the Jaccard of their sets per layer, one line
    per module type (mean over the seed pairs, their range as a band), one row of panels per set
    (the skill-specific set against each control, each data set's TopK set) and one column per
    sample count. Matrices outside the blocks (no layer) and layers and modules where neither set
    selects anything (union 0) are not drawn."""
    if len(table):
        table = table[table["layer"].notna() & (table["union"] > 0)]
    if table.empty:
        return _empty(path, "per-layer consistency results")
    modules = sorted(table["module"].unique())
    colours = {m: plt.get_cmap("tab10").colors[i % 10] for i, m in enumerate(modules)}
    sets = sorted(set(table[["model", "method", "control"]].itertuples(index=False, name=None)),
                  key=lambda s: (s[0], s[1] != SPECIFIC, s[1], s[2]))
    ns = sorted(table["n_samples"].unique())
    fig, axes = _panels(sets, ns, width=3.2, height=2.6)
    for row, (model, method, control) in enumerate(sets):
        for col, n in enumerate(ns):
            ax = axes[row][col]
            rows = table[(table["model"] == model) & (table["method"] == method) & (table["control"] == control)
                         & (table["n_samples"] == n)]
            for module in modules:
                stats = _spread(rows[rows["module"] == module], ["layer"], "jaccard").sort_values("layer")
                layers = stats["layer"].to_numpy(dtype=float)
                ax.plot(layers, stats["mean"], marker="o", ms=3, color=colours[module], label=module)
                ax.fill_between(layers, stats["low"], stats["high"], color=colours[module], alpha=0.15, lw=0)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            title = set_name(method, control) + (f", {model}" if len({s[0] for s in sets}) > 1 else "")
            ax.set(ylim=(0, 1.02), title=f"{title}, n = {n}", xlabel="layer" if row == len(sets) - 1 else "",
                   ylabel="Jaccard" if col == 0 else "")
            ax.title.set_fontsize(9)
    _save(fig, path, *_legend(axes))


def plot_layers(table: pd.DataFrame, path: str | Path) -> None:
    """Where each method's set sits: the share of every matrix it selects, by layer and module type
    (heatmaps at the median K of the study)."""
    table = table[table["method"].isin(PLACED_METHODS)]
    if table.empty:
        return _empty(path, "sets")
    ks = sorted(table["k_fraction"].dropna().unique())
    k = ks[len(ks) // 2] if ks else None
    table = table[table["k_fraction"] == k]
    sets = table[["model", "method", "control"]].drop_duplicates().sort_values(["model", "method", "control"])
    fig, axes = plt.subplots(1, len(sets), figsize=(3.4 * len(sets), 3.8), squeeze=False)
    for ax, (model, method, control) in zip(axes[0], sets.itertuples(index=False)):
        rows = table[(table["model"] == model) & (table["method"] == method) & (table["control"] == control)]
        grid = rows.groupby(["layer", "module"])["share_of_matrices"].mean().unstack("module") * 100
        image = ax.imshow(grid.to_numpy(), aspect="auto", cmap="viridis", origin="lower")
        ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(grid.shape[0]), [int(i) for i in grid.index], fontsize=7)
        size = f"K = {k:.2%}"
        title = set_name(method, control)
        ax.set(title=f"{title}\n{size}" + (f", {model}" if sets["model"].nunique() > 1 else ""), ylabel="layer")
        ax.title.set_fontsize(9)
        fig.colorbar(image, ax=ax, label="% of the matrix selected", shrink=0.8)
    _save(fig, path)


def plot_share(table: pd.DataFrame, path: str | Path) -> None:
    """Each set's share of all the model's parameters against K."""
    table = table[~table["method"].map(lambda m: bool(METHODS[m].same_count_as) if m in METHODS else False)]
    if table.empty:
        return _empty(path, "sets")
    table = table.assign(share_of_model=table["share_of_model"] * 100)  # random: MathNeuro's count, by design
    models = sorted(table["model"].unique())
    fig, axes = _panels(models, ["share"], width=6)
    for row, model in enumerate(models):
        ax = axes[row][0]
        rows = table[table["model"] == model]
        controls = sorted(c for c in rows["control"].unique() if c != NO_CONTROL)
        for (method, control), group in rows.groupby(["method", "control"]):
            label = set_name(method, control)
            ls = STYLES[controls.index(control) % len(STYLES)] if control in controls else "-"
            stats = _spread(group, ["k_fraction"], "share_of_model").sort_values("k_fraction")
            ax.plot(stats["k_fraction"] * 100, stats["mean"], marker="o", ms=3, color=COLOURS.get(method), ls=ls,
                    label=label)
        _k_axis(ax, rows["k_fraction"] * 100)
        ax.set_yscale("log")
        percent = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}%")
        ax.yaxis.set_major_formatter(percent)
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # labelled minor ticks overlap over decades
        ax.set(xlabel="K (% of each matrix, log)", ylabel="share of all parameters (log)", title=model)
    _save(fig, path, *_legend(axes))


def plot_data_efficiency(table: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Accuracy after editing with sets found from n samples, against n (log), per task."""
    if table.empty:
        return _empty(path, "data efficiency results (data_efficiency.edits is empty)")
    _curves(table, path, x="n_samples", keys=["method", "control", "k", "edit"], x_axis=_log_ticks,
            xlabel="samples per data set (log)", ylabel="accuracy after editing", summary=summary)


def plot_factor_sweep(table: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Accuracy against the scaling factor, per task: the sets' response to amplification."""
    if table.empty or table["factor"].nunique() < 2:
        return _empty(path, "factor sweep (scaling.edits has fewer than two factors)")
    _curves(table, path, x="factor", keys=["method", "control", "k"], x_axis=lambda ax, factors: None,
            xlabel="factor on the selected weights", ylabel="accuracy", unedited="unedited (x1)", summary=summary)


def _measure(metric: str) -> str:
    """How a metric's change is drawn: bits per byte (lower is better) apart from accuracies."""
    return "bits per byte" if str(metric).startswith("bits_per_byte") else "accuracy"


MEASURE_AXES = {  # measure -> (how its change is expressed, axis unit)
    "accuracy": (lambda rows: rows["change"] * 100, "points"),
    "bits per byte": (lambda rows: (rows["value"] / rows["base_value"] - 1) * 100, "% of unedited; higher is worse"),
}


def plot_specificity(table: pd.DataFrame, path: str | Path) -> None:
    """Change on the skill's tasks against the mean change on the other tasks, one point per set and
    factor (mean over repeats): a specific set moves along one axis only. Accuracies (change in
    points) and bits per byte (change in % of the unedited model's) get a panel each."""
    table = table[table["task"].isin(_headline_tasks(table))] if len(table) else table
    if len(table):
        table = table.assign(measure=table["metric"].map(_measure))
    shown = [m for m in MEASURE_AXES  # the measures with skill and other tasks
             if len(table) and table.loc[table["measure"] == m, "skill_task"].nunique() == 2]
    if not shown:
        return _empty(path, "specificity (needs skill and other tasks in the scaling table)")
    keys = ["model", "method", "control", "k", "edit", "factor", "seed"]
    models = sorted(table["model"].unique())
    fig, axes = _panels(models, shown, width=5.5, height=4.2)
    for col, measure in enumerate(shown):
        rows = table[table["measure"] == measure]
        change, unit = MEASURE_AXES[measure]
        per_seed = rows.assign(change=change(rows)).groupby(keys + ["skill_task"], dropna=False)["change"].mean()
        points = per_seed.unstack("skill_task").groupby(level=keys[:-1], dropna=False).mean().reset_index()
        for row, model in enumerate(models):
            ax = axes[row][col]
            for (method, control), group in points[points["model"] == model].groupby(["method", "control"]):
                ax.plot(group[False], group[True], "o", color=COLOURS.get(method),
                        label=set_name(method, control))
                for x, y, factor in zip(group[False], group[True], group["factor"]):
                    ax.annotate(f"x{factor:g}", (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
            ax.axhline(0, color="black", lw=0.8)
            ax.axvline(0, color="black", lw=0.8)
            ax.set(xlabel=f"mean change on the other tasks\n({unit})", ylabel=f"change on the skill's tasks\n({unit})",
                   title=f"{model}: {measure}" if len(models) > 1 else measure)
    _save(fig, path, *_legend(axes))


def _heatmap(ax, matrix: pd.DataFrame, *, title: str, label: str, centred: bool) -> None:
    """``matrix`` as coloured cells with their values written in, rows and columns labelled."""
    values = matrix.to_numpy(dtype=float)
    bound = np.nanmax(np.abs(values)) if np.isfinite(values).any() else 1.0
    image = ax.imshow(values, cmap="RdBu" if centred else "viridis", aspect="auto",
                      vmin=-bound if centred else 0, vmax=bound if centred else 1)
    for (i, j), value in np.ndenumerate(values):
        if np.isfinite(value):
            dark = abs(value) > 0.6 * bound if centred else value < 0.5
            ax.text(j, i, f"{value:.2f}" if not centred else f"{value:+.1f}", ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(matrix.shape[0]), matrix.index, fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.8)


def plot_subskills(table: pd.DataFrame, path: str | Path) -> None:
    """The sub-skill matrix: each sub-skill's set pruned (rows) against every evaluated task
    (columns), the mean change from the unedited model over the repeats (accuracies in points),
    one panel per model and K. A diagonal says the parts live apart."""
    if table.empty:
        return _empty(path, "sub-skill study")
    from mathneuro.summary import headline_rows

    rows, _ = headline_rows(table)
    rows = rows[rows["task"].isin(_headline_tasks(rows))]
    points = rows["value"].between(0, 1) & rows["base_value"].between(0, 1)
    rows = rows.assign(shown=rows["change"].where(~points, rows["change"] * 100))
    panels = sorted(set(rows[["model", "k"]].itertuples(index=False, name=None)))
    fig, axes = _panels(panels, [0], width=1.0 + 0.9 * rows["task"].nunique(), height=0.6 + 0.5 * rows["skill"].nunique())
    for ax, (model, k) in zip(axes[:, 0], panels):
        mine = rows[(rows["model"] == model) & (rows["k"] == k)]
        matrix = mine.pivot_table(index="skill", columns="task", values="shown", aggfunc="mean")
        _heatmap(ax, matrix, title=f"{model}, K {k}: each set pruned (rows)", label="change (points)", centred=True)
    _save(fig, path)


def plot_subskill_overlap(table: pd.DataFrame, path: str | Path) -> None:
    """How much the sub-skills' sets share: the Jaccard of every pair (mean over the repeats), one
    panel per model and K."""
    if table.empty:
        return _empty(path, "sub-skill study")
    panels = sorted(set(table[["model", "k"]].itertuples(index=False, name=None)))
    n = table["skill_a"].nunique()
    fig, axes = _panels(panels, [0], width=1.5 + 1.0 * n, height=0.8 + 0.6 * n)
    for ax, (model, k) in zip(axes[:, 0], panels):
        mine = table[(table["model"] == model) & (table["k"] == k)]
        matrix = mine.pivot_table(index="skill_a", columns="skill_b", values="jaccard", aggfunc="mean")
        skills = sorted(set(matrix.index) | set(matrix.columns))
        _heatmap(ax, matrix.reindex(index=skills, columns=skills), title=f"{model}, K {k}: the sets' Jaccard",
                 label="Jaccard", centred=False)
    _save(fig, path)


def plot_localization(table: pd.DataFrame, path: str | Path) -> None:
    """Sets found on a planted model against the set S its skill was planted in (over every
    matrix): recall and precision against the set's size (its share of the target entries, log),
    one line per method and control (mean over the seeds, their range as a band), one row of
    panels per planted model. Dotted: a set drawn at random (recall = its share of the entries,
    precision = S's share)."""
    from mathneuro.tables import ALL_MODULES

    table = table[table["module"] == ALL_MODULES] if len(table) else table
    if table.empty:
        return _empty(path, "planted model (configs/examples/planted.yaml)")
    table = table.assign(size_percent=100 * table["found"] / table["numel"])
    models, measures = sorted(table["model"].unique()), ["recall", "precision"]
    fig, axes = _panels(models, measures)
    for row, model in enumerate(models):
        rows = table[table["model"] == model]
        for col, measure in enumerate(measures):
            ax = axes[row][col]
            for i, ((method, control), group) in enumerate(rows.groupby(["method", "control"])):
                stats = _spread(group, ["k"], measure).merge(_spread(group, ["k"], "size_percent")[["k", "mean"]],
                                                            on="k", suffixes=("", "_size")).sort_values("mean_size")
                ax.plot(stats["mean_size"], stats["mean"], marker="o", color=COLOURS.get(method),
                        ls=STYLES[i % len(STYLES)], label=set_name(method, control))
                ax.fill_between(stats["mean_size"], stats["low"], stats["high"], color=COLOURS.get(method), alpha=0.15)
            sizes = np.sort(rows["size_percent"].unique())
            chance = sizes / 100 if measure == "recall" else np.full(len(sizes), rows["chance"].iloc[0])
            ax.plot(sizes, chance, color="black", ls=":", label="a random set")
            _k_axis(ax, rows["size_percent"].round(3))
            ax.set(ylim=(0, 1.02), xlabel="set size (% of the target entries, log)", ylabel=f"{measure} against S",
                   title=model if len(models) > 1 else measure)
    _save(fig, path, *_legend(axes))


DRAW = {  # figure (mathneuro.analyses.FIGURES) -> how it is drawn from its table
    "pruning": plot_pruning,
    "scaling": plot_scaling,
    "factor_sweep": plot_factor_sweep,
    "specificity": plot_specificity,
    "data_efficiency": plot_data_efficiency,
    "consistency": plot_consistency,
    "layer_overlap": plot_layer_overlap,
    "layers": plot_layers,
    "share": plot_share,
    "subskills": plot_subskills,
    "subskill_overlap": plot_subskill_overlap,
    "agreement": plot_agreement,
    "finetuning": plot_finetuning,
    "localization": plot_localization,
}
assert set(DRAW) == set(FIGURES), "every figure of mathneuro.analyses.FIGURES needs a way to draw it"
WITH_SUMMARY = {"pruning", "scaling", "factor_sweep", "data_efficiency", "finetuning"}  # figures that draw the paired intervals


def draw(figure: str, table: pd.DataFrame, path: str | Path, summary: pd.DataFrame | None = None) -> None:
    """Draw ``figure`` from its table (and, for the edit figures, the table's summary)."""
    if figure in WITH_SUMMARY:
        return DRAW[figure](table, path, summary=summary)
    return DRAW[figure](table, path)


def summary_html(summary: pd.DataFrame, name: str) -> str:
    """A summary table as a small self-contained HTML page (for the Snakemake report)."""
    shown = summary.drop(columns=[c for c in summary.columns if summary[c].nunique(dropna=False) == 1 and c != "model"])
    style = ("body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse} "
             "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right} th{background:#f4f4f4}")
    table = shown.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="")
    return f"<html><head><meta charset='utf-8'><style>{style}</style></head><body><h3>{name}: summary over repeats" \
           f" ({len(summary)} rows; columns equal on every row omitted)</h3>{table}</body></html>"
