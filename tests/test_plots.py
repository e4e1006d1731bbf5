"""Figures and report pages drawn from small tables built here (the workflow test draws the real ones)."""

import pandas as pd
import pytest

from mathneuro.plots import DRAW, _headline_tasks, summary_html


GROUP = None  # lm-eval gives a group's score no sample count


@pytest.mark.parametrize("tasks, shown", [
    ({"gsm8k": 200, "mmlu": GROUP, "mmlu_anatomy": 135, "mmlu_virology": 166, "race": 1045}, ["gsm8k", "mmlu", "race"]),
    ({"minerva_math": GROUP, "minerva_math_algebra": 200, "minerva_math_geometry": 200}, ["minerva_math"]),
    ({"minerva_math_algebra": 200, "minerva_math_geometry": 200}, ["minerva_math_algebra", "minerva_math_geometry"]),
    ({"toy_math": 200, "toy_math_reworded": 200, "toy_reading": 200}, ["toy_math", "toy_math_reworded", "toy_reading"]),
])
def test_a_group_stands_for_its_subtasks_and_lone_tasks_stay(tasks, shown):
    table = pd.DataFrame({"task": list(tasks) * 2, "n": pd.array(list(tasks.values()) * 2, dtype="Int64")})
    assert _headline_tasks(table) == shown


def test_summary_page_keeps_the_varying_columns_and_the_model():
    summary = pd.DataFrame({"model": ["toy", "toy"], "task": ["math", "reading"], "edit": ["prune", "prune"],
                            "mean": [0.175, 0.98]})
    page = summary_html(summary, "pruning")
    assert "<table" in page and "reading" in page and "0.175" in page and ">toy<" in page
    assert ">edit<" not in page  # equal on every row: said once in the heading, not repeated per row


def _pruning_table():
    rows = []
    for method, control, k in [("mathneuro", "reading", 0.01), ("mathneuro", "reading", 0.05),
                               ("random", "reading", 0.05), ("wanda", "none", 0.05), ("lape", "none", 0.05)]:
        for seed in (0, 1):
            for task in ("math", "reading"):
                rows.append(dict(model="toy", method=method, control=control, edit="prune", k=str(k),
                                 k_fraction=k, seed=seed, task=task, metric="acc", value=0.5 + seed / 10,
                                 base_value=0.9, change=-0.4))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("name", ["pruning", "scaling"])
def test_edit_figures_are_drawn_for_every_method_kind(name, tmp_path):
    path = tmp_path / f"{name}.png"
    DRAW[name](_pruning_table(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


@pytest.mark.parametrize("name", sorted(DRAW))
def test_an_empty_table_gives_a_figure_that_says_so(name, tmp_path):
    path = tmp_path / f"{name}.png"
    DRAW[name](pd.DataFrame(columns=["model", "method", "control"]), path)
    assert path.stat().st_size > 1000
