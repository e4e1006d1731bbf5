"""One figure per table, from the summary frames (means over repeats, error bars = std)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def _grid(n: int, width: float = 4.0):
    fig, axes = plt.subplots(1, max(n, 1), figsize=(width * max(n, 1), 3.4), squeeze=False)
    return fig, axes[0]


def _save(fig, path: str | Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _mean(table: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    return table.groupby(keys, dropna=False, as_index=False)[column].agg(["mean", "std"])


def plot_pruning(table: pd.DataFrame, path: str | Path) -> None:
    """Accuracy after pruning against K, one panel per task, one line per method; dashed = unedited."""
    tasks = sorted(table["task"].unique())
    fig, axes = _grid(len(tasks))
    for ax, task in zip(axes, tasks):
        rows = table[table["task"] == task]
        for method, group in rows.groupby("method"):
            stats = _mean(group, ["k_fraction"], "value").sort_values("k_fraction")
            if stats["k_fraction"].isna().all():  # LAPE: one point, no K
                ax.axhline(stats["mean"].iloc[0], color="gray", lw=1, ls=":", label=f"{method}")
                continue
            ax.errorbar(stats["k_fraction"] * 100, stats["mean"], yerr=stats["std"], marker="o", label=method)
        if len(rows):
            ax.axhline(rows["base_value"].iloc[0], color="black", ls="--", lw=1, label="unedited")
        ax.set(title=task, xlabel="K (% of each matrix)", ylabel=rows["metric"].iloc[0] if len(rows) else "")
    axes[0].legend(fontsize=7)
    _save(fig, path)


def plot_scaling(table: pd.DataFrame, path: str | Path) -> None:
    """Change against the unedited model after scaling, per task and method."""
    tasks = sorted(table["task"].unique())
    fig, axes = _grid(len(tasks))
    for ax, task in zip(axes, tasks):
        stats = _mean(table[table["task"] == task], ["method", "k", "edit"], "change")
        labels = [f"{r.method}\n{r.k} {r.edit}" for r in stats.itertuples()]
        ax.bar(labels, stats["mean"] * 100, yerr=stats["std"].fillna(0) * 100)
        ax.axhline(0, color="black", lw=0.8)
        ax.set(title=task, ylabel="change (points)")
        ax.tick_params(axis="x", labelsize=7)
    _save(fig, path)


def plot_consistency(table: pd.DataFrame, path: str | Path) -> None:
    """Overlap of two independent identifications against the number of samples."""
    fig, axes = _grid(1, width=5)
    for metric, group in table.groupby("metric"):
        stats = _mean(group, ["n_samples"], "value").sort_values("n_samples")
        axes[0].errorbar(stats["n_samples"], stats["mean"], yerr=stats["std"], marker="o", label=metric)
    axes[0].set(xscale="log", xlabel="samples", ylabel="overlap", ylim=(0, 1.02))
    axes[0].legend(fontsize=7)
    _save(fig, path)


def plot_layers(table: pd.DataFrame, path: str | Path) -> None:
    """Share of each method's selected parameters that sits in each layer."""
    fig, axes = _grid(1, width=5)
    per_layer = table.groupby(["method", "k", "seed", "layer"], as_index=False)["share_of_selected"].sum()
    for (method, k), group in per_layer.groupby(["method", "k"]):
        stats = _mean(group, ["layer"], "share_of_selected").sort_values("layer")
        axes[0].plot(stats["layer"], stats["mean"], marker="o", label=f"{method} {k}")
    axes[0].set(xlabel="layer", ylabel="share of selected parameters")
    axes[0].legend(fontsize=7)
    _save(fig, path)


def plot_share(table: pd.DataFrame, path: str | Path) -> None:
    """Selected parameters as a share of all the model's parameters."""
    fig, axes = _grid(1, width=6)
    stats = _mean(table, ["method", "k"], "share_of_model")
    axes[0].bar([f"{r.method}\n{r.k}" for r in stats.itertuples()], stats["mean"] * 100, yerr=stats["std"].fillna(0) * 100)
    axes[0].set(ylabel="% of all parameters")
    axes[0].tick_params(axis="x", labelsize=7)
    _save(fig, path)


PLOTS = {
    "pruning": plot_pruning,
    "scaling": plot_scaling,
    "consistency": plot_consistency,
    "layers": plot_layers,
    "share": plot_share,
}
