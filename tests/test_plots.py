"""Figures and report pages drawn from small tables built here (the workflow test draws the real ones)."""

import pandas as pd
import pytest

from mathneuro.methods import METHODS
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


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plots save, kept open for the test to read (``_save`` also writes the file)."""
    from mathneuro import plots

    figures = []
    save = plots._save

    def keep(fig, path, handles=None, labels=None):
        figures.append((fig, list(labels or [])))
        fig.canvas.draw()
        save(fig, path, handles, labels)

    monkeypatch.setattr(plots, "_save", keep)
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: None)
    return figures


def test_pruning_figure_draws_every_set_at_its_ks_with_the_repeats_mean(drawn, tmp_path):
    table = _pruning_table()
    DRAW["pruning"](table, tmp_path / "pruning.png")
    (fig, labels), = drawn
    assert (tmp_path / "pruning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == sorted(table["task"].unique())
    expected = {METHODS[m].label + ("" if c == "none" else f" vs {c}"): group
                for (m, c), group in table.groupby(["method", "control"])}
    assert set(labels) == set(expected) | {"unedited"}
    for ax, task in zip(axes, sorted(table["task"].unique())):
        lines = {line.get_label(): line for line in ax.get_lines()}
        for label, group in expected.items():
            rows = group[group["task"] == task]
            means = rows.groupby("k_fraction")["value"].mean()
            x, y = lines[label].get_data()
            assert list(x) == pytest.approx(list(means.index * 100)) and list(y) == pytest.approx(list(means))
        assert lines["unedited"].get_ydata()[0] == pytest.approx(0.9)


def test_scaling_figure_has_one_bar_per_set_with_the_change_in_points(drawn, tmp_path):
    table = _pruning_table()
    DRAW["scaling"](table, tmp_path / "scaling.png")
    (fig, labels), = drawn
    variants = table[["method", "control", "k"]].drop_duplicates()
    for ax in fig.get_axes():
        bars = [patch for patch in ax.patches]
        assert len(bars) == len(variants)
        assert [bar.get_height() for bar in bars] == pytest.approx([-40.0] * len(variants))
    assert set(labels) == {METHODS[m].label for m in table["method"].unique()}


@pytest.mark.parametrize("name", sorted(DRAW))
def test_an_empty_table_gives_a_figure_that_says_so(name, drawn, tmp_path):
    path = tmp_path / f"{name}.png"
    DRAW[name](pd.DataFrame(columns=["model", "method", "control"]), path)
    (fig, _), = drawn
    texts = [text.get_text() for ax in fig.get_axes() for text in ax.texts]
    assert len(texts) == 1 and texts[0].startswith("no ") and texts[0].endswith(" in this study")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _scaling_table():
    """Two sets at x1.1, two seeds; accuracies (gsm8k_cot the skill's) and bits per byte
    (bpb_gsm8k the skill's): value = base + the change the row names."""
    base = {"gsm8k_cot": 0.40, "mmlu": 0.50, "bpb_gsm8k": 1.00, "bpb_mmlu": 2.00}
    shift = {("mathneuro", "gsm8k_cot"): 0.05, ("mathneuro", "mmlu"): -0.01, ("random", "gsm8k_cot"): 0.0,
             ("random", "mmlu"): 0.02, ("mathneuro", "bpb_gsm8k"): -0.10, ("mathneuro", "bpb_mmlu"): 0.02,
             ("random", "bpb_gsm8k"): 0.0, ("random", "bpb_mmlu"): -0.04}
    rows = []
    for (method, task), delta in shift.items():
        for seed in (0, 1):
            metric = "bits_per_byte,none" if task.startswith("bpb_") else "acc,none"
            rows.append(dict(model="m", method=method, control="mmlu", k="5pct", edit="x1.1", factor=1.1, seed=seed,
                             task=task, metric=metric, n=20, value=base[task] + delta, base_value=base[task],
                             change=delta, skill_task=task in ("gsm8k_cot", "bpb_gsm8k")))
    return pd.DataFrame(rows), base, shift


def test_specificity_draws_accuracies_in_points_and_bits_per_byte_in_percent_apart(drawn, tmp_path):
    table, base, shift = _scaling_table()
    DRAW["specificity"](table, tmp_path / "specificity.png")
    (fig, labels), = drawn
    accuracy, bpb = fig.get_axes()
    assert (accuracy.get_title(), bpb.get_title()) == ("accuracy", "bits per byte")
    assert "points" in accuracy.get_ylabel() and "% of unedited" in bpb.get_ylabel()
    for ax, (skill, other), percent in ((accuracy, ("gsm8k_cot", "mmlu"), None), (bpb, ("bpb_gsm8k", "bpb_mmlu"), True)):
        points = {line.get_label(): line.get_xydata()[0] for line in ax.get_lines() if line.get_marker() == "o"}
        for method, label in (("mathneuro", "MathNeuro vs mmlu"), ("random", "random, same count vs mmlu")):
            def moved(task):
                return 100 * shift[(method, task)] / (base[task] if percent else 1)
            assert list(points[label]) == pytest.approx([moved(other), moved(skill)])


def _layer_overlap_table():
    """Two sets at two sample counts, three seed pairs, layers 0-2 of two module types, plus an
    empty cell (no union) and the LM head (no layer), neither of which is drawn."""
    rows = []
    for method, control in (("topk", "math"), ("mathneuro", "reading")):
        for n in (1, 10):
            for pair, (seed_a, seed_b) in enumerate([(0, 1), (0, 2), (1, 2)]):
                for layer in (0, 1, 2):
                    for i, module in enumerate(("q_proj", "down_proj")):
                        empty = (module, layer) == ("q_proj", 2) and method == "topk"
                        rows.append(dict(model="toy", method=method, control=control, n_samples=n, seed_a=seed_a,
                                         seed_b=seed_b, layer=layer, module=module, union=0 if empty else 50,
                                         jaccard=1.0 if empty else 0.1 * layer + 0.05 * i + 0.02 * pair + n / 100))
                rows.append(dict(model="toy", method=method, control=control, n_samples=n, seed_a=seed_a,
                                 seed_b=seed_b, layer=None, module="lm_head", union=50, jaccard=0.9))
    return pd.DataFrame(rows).astype({"layer": "Int64"})


def test_layer_overlap_draws_the_pairs_mean_jaccard_per_layer_and_module_for_each_set_and_n(drawn, tmp_path):
    table = _layer_overlap_table()
    DRAW["layer_overlap"](table, tmp_path / "layer_overlap.png")
    (fig, labels), = drawn
    assert set(labels) == {"q_proj", "down_proj"}  # no line for the LM head
    titles = [ax.get_title() for ax in fig.get_axes()]
    assert titles == ["MathNeuro vs reading, n = 1", "MathNeuro vs reading, n = 10", "TopK(math), n = 1",
                      "TopK(math), n = 10"]
    drawn_rows = table[table["layer"].notna() & (table["union"] > 0)]
    for ax, (method, n) in zip(fig.get_axes(), [("mathneuro", 1), ("mathneuro", 10), ("topk", 1), ("topk", 10)]):
        lines = {line.get_label(): line for line in ax.get_lines()}
        for module in ("q_proj", "down_proj"):
            rows = drawn_rows[(drawn_rows["method"] == method) & (drawn_rows["n_samples"] == n)
                              & (drawn_rows["module"] == module)]
            means = rows.groupby("layer")["jaccard"].mean()
            x, y = lines[module].get_data()
            assert list(x) == list(means.index) and list(y) == pytest.approx(list(means))
    topk_q = {line.get_label(): line for line in fig.get_axes()[2].get_lines()}["q_proj"]
    # layer 2, where neither TopK(math) set selects a q_proj entry, is left out
    assert list(topk_q.get_xdata()) == [0, 1]


def _subskill_table():
    """Three sub-skill sets, two repeats, each taking its own task down more than the others."""
    rows = []
    for skill in ("math_add", "math_sub", "math_mul"):
        for seed in (0, 1):
            for task in ("toy_math_add", "toy_math_sub", "toy_math_mul", "toy_reading"):
                change = -0.5 - seed / 10 if task.endswith(skill[-3:]) else -0.1
                rows.append(dict(model="toy", skill=skill, method="mathneuro_all", control="x", k="5pct",
                                 k_fraction=0.05, edit="x0", seed=seed, task=task, metric="exact_match,strict-match",
                                 n=67, value=0.9 + change, base_value=0.9, change=change))
    return pd.DataFrame(rows)


def test_the_subskill_matrix_shows_each_pruned_set_against_each_task_in_points(drawn, tmp_path):
    table = _subskill_table()
    DRAW["subskills"](table, tmp_path / "subskills.png")
    (fig, _), = drawn
    image = fig.axes[0].images[0]
    values = image.get_array()
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    cols = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    expected = table.groupby(["skill", "task"])["change"].mean() * 100
    for i, skill in enumerate(rows):
        for j, task in enumerate(cols):
            assert values[i, j] == pytest.approx(expected[(skill, task)])
    assert sorted(rows) == ["math_add", "math_mul", "math_sub"] and "toy_reading" in cols


def test_the_subskill_overlap_is_a_matrix_of_the_pairs_mean_jaccard(drawn, tmp_path):
    import itertools

    rows = [dict(model="toy", k="5pct", seed=seed, skill_a=a, skill_b=b, jaccard=0.1 * (len(a) + len(b)) / 16 + seed / 100)
            for seed in (0, 1) for a, b in itertools.permutations(["math_add", "math_sub", "math_mul"], 2)]
    table = pd.DataFrame(rows)
    DRAW["subskill_overlap"](table, tmp_path / "overlap.png")
    (fig, _), = drawn
    values = fig.axes[0].images[0].get_array()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    means = table.groupby(["skill_a", "skill_b"])["jaccard"].mean()
    for (i, a), (j, b) in itertools.product(enumerate(labels), repeat=2):
        if a == b:
            assert values.mask[i, j]  # a set with itself: not drawn
        else:
            assert values[i, j] == pytest.approx(means[(a, b)])
