"""python -m mathneuro.summary: a study's own numbers in the README's layout, from its tables."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from mathneuro.summary import (columns, layer_overlap_rows, layer_rows, pick_metric, report, set_label, task_label,
                               variant_table)
from mathneuro.tables import EVAL_MEASURES, OVERLAP_MEASURES, summarize

TASKS = {"toy_math": "exact_match,none", "toy_math_reworded": "exact_match,none", "toy_reading": "acc,none",
         "toy_facts": "acc,none"}
BASE = {"toy_math": 0.91, "toy_math_reworded": 0.915, "toy_reading": 1.0, "toy_facts": 0.95}
# (method, control) -> per seed, per task value (seed 0, seed 1); sizes (selected per seed)
SETS = {
    ("mathneuro", "reading"): ([0.30, 0.27], [0.17, 0.18], [1.0, 1.0], [0.93, 0.936]),
    ("random", "reading"): ([0.91, 0.91], [0.87, 0.866], [1.0, 0.996], [0.95, 0.946]),
    ("wanda", "none"): ([0.0, 0.0], [0.0, 0.0], [0.74, 0.74], [0.66, 0.66]),
    ("lape", "reading"): ([0.91, 0.91], [0.89, 0.89], [1.0, 1.0], [0.95, 0.95]),
}
SIZES = {("mathneuro", "reading"): [7400, 7534], ("random", "reading"): [7400, 7534], ("wanda", "none"): [24570] * 2,
         ("lape", "reading"): [384, 384]}
TARGETS = 491_520


def pruning_table() -> pd.DataFrame:
    rows = []
    for (method, control), values in SETS.items():
        for k, fraction, scale in (("5pct", 0.05, 1.0), ("1pct", 0.01, 0.5)):
            for seed in (0, 1):
                for (task, metric), per_seed in zip(TASKS.items(), values):
                    value = per_seed[seed] if k == "5pct" else BASE[task] * scale
                    common = {"model": "toy", "method": method, "control": control, "k": k, "k_fraction": fraction,
                              "edit": "x0", "factor": 0.0, "n_samples": 500, "seed": seed, "suite": "toy",
                              "task": task, "stderr": 0.03, "base_value": BASE[task]}
                    rows.append({**common, "metric": metric, "value": value})
                    if metric.startswith("acc"):  # a second metric, which the layout does not report
                        rows.append({**common, "metric": "acc_norm,none", "value": 0.5})
    table = pd.DataFrame(rows)
    table["change"] = table["value"] - table["base_value"]
    table["relative_change"] = table["change"] / table["base_value"]
    return table


def share_table() -> pd.DataFrame:
    rows = [{"model": "toy", "method": method, "control": control, "k": k, "k_fraction": fraction, "n_samples": 500,
             "seed": seed, "selected": size[seed] // (5 if k == "1pct" else 1), "target_parameters": TARGETS,
             "model_parameters": 620_000}
            for (method, control), size in SIZES.items() for k, fraction in (("5pct", 0.05), ("1pct", 0.01))
            for seed in (0, 1)]
    table = pd.DataFrame(rows)
    table["share_of_targets"] = table["selected"] / table["target_parameters"]
    table["share_of_model"] = table["selected"] / table["model_parameters"]
    return table


def summaries():
    pruning = summarize(pruning_table(), EVAL_MEASURES)
    share = summarize(share_table(), ["selected", "target_parameters", "model_parameters", "share_of_targets",
                                      "share_of_model"])
    return pruning, share


EXPECTED_5PCT = [
    ["none", "", "91.0", "91.5", "100.0", "95.0"],
    ["MathNeuro (math − reading)", "7,467 (1.52% of the matrices)", "28.5", "17.5", "100.0", "93.3"],
    ["random, same count per matrix (reading)", "7,467 (1.52% of the matrices)", "91.0", "86.8", "99.8", "94.8"],
    ["Wanda (top 5% on math)", "24,570 (5.00% of the matrices)", "0.0", "0.0", "74.0", "66.0"],
    ["LAPE (top_rate 5%, math against reading)", "384 (0.08% of the matrices, 3 neurons)", "91.0", "89.0", "100.0",
     "95.0"],
]


def test_the_pruning_table_is_the_readmes_layout_means_of_the_repeats():
    pruning, share = summaries()
    frame = variant_table(pruning, share, k="5pct", edit="x0", hidden_size=128)
    assert list(frame.columns) == ["set", "size", "math", "reworded math", "reading", "facts"]
    assert frame.values.tolist() == EXPECTED_5PCT


@pytest.mark.parametrize(
    ("metrics", "chosen"),
    [
        (["acc,none", "acc_norm,none"], "acc,none"),
        (["exact_match,flexible-extract", "exact_match,strict-match"], "exact_match,strict-match"),
        (["bleu,none", "chrf,none"], "bleu,none"),
    ],
)
def test_a_task_is_reported_by_one_metric(metrics, chosen):
    assert pick_metric(metrics) == chosen


def test_mathneuro_all_names_every_control():
    assert set_label("mathneuro_all", "mmlu+race", "gsm8k", "5pct", 0.05) == "MathNeuro-all (gsm8k − mmlu ∪ race)"


def test_the_command_prints_every_k_from_a_tables_folder(tmp_path):
    pruning, share = summaries()
    folder = tmp_path / "results" / "tables" / "toy"
    folder.mkdir(parents=True)
    pruning.to_parquet(folder / "pruning_summary.parquet")
    share.to_parquet(folder / "share_summary.parquet")
    models = tmp_path / "results" / "models" / "toy"
    models.mkdir(parents=True)
    (models / "config.json").write_text('{"hidden_size": 128}')
    text = report(folder)
    assert text.index("K = 1% per matrix") < text.index("K = 5% per matrix")  # smallest K first
    table = text.split("K = 5% per matrix:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[0] == "| set | size | math | reworded math | reading | facts |"
    assert table[2:] == ["| " + " | ".join(row) + " |" for row in EXPECTED_5PCT]
    assert "means of 2 repeats" in text
    done = subprocess.run([sys.executable, "-m", "mathneuro.summary", str(folder)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == text
    missing = subprocess.run([sys.executable, "-m", "mathneuro.summary", str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "pruning_summary.parquet" in missing.stderr


def test_a_task_evaluated_in_two_suites_is_printed_once_per_suite(tmp_path):
    """A child config cannot remove a base's suite, so one task can be evaluated alone and inside
    another suite: each evaluation gets its column, named by its suite, with its own values."""
    table = pruning_table()
    again = table[table["task"] == "toy_facts"].assign(suite="more", value=lambda t: t["value"] - 0.1,
                                                       base_value=lambda t: t["base_value"] - 0.1)
    pruning = summarize(pd.concat([table, again], ignore_index=True), EVAL_MEASURES)
    folder = tmp_path / "results" / "tables" / "toy"
    folder.mkdir(parents=True)
    pruning.to_parquet(folder / "pruning_summary.parquet")
    summaries()[1].to_parquet(folder / "share_summary.parquet")
    text = report(folder)
    rows = text.split("K = 5% per matrix:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    base = dict(zip(header, [cell.strip() for cell in rows[2].strip("|").split("|")]))
    facts = task_label("toy_facts")
    assert (base[f"{facts} (toy)"], base[f"{facts} (more)"]) == ("95.0", "85.0")  # each suite's own unedited value
    assert facts not in base


def test_a_fine_tuning_run_without_a_set_is_printed_once_under_no_k(tmp_path):
    """The finetuning table's rows of a run that trains every parameter of the unedited model carry
    no set (analyses.NO_SET): the summary prints them in a table of their own, not once per K."""
    from mathneuro.analyses import NO_SET

    pruning, share = summaries()
    per_set = pruning_table()
    per_set = per_set[(per_set["k"] == "5pct") & per_set["method"].isin(["mathneuro", "random"])].assign(
        edit="learn", factor=float("nan"))
    unedited = per_set[per_set["method"] == "mathneuro"].assign(
        method=NO_SET, control=NO_SET, k=NO_SET, k_fraction=float("nan"), n_samples=0, edit="learn_all",
        value=lambda t: t["base_value"] - 0.05)
    unedited["change"] = unedited["value"] - unedited["base_value"]
    tuned = summarize(pd.concat([per_set, unedited], ignore_index=True), EVAL_MEASURES)
    folder = tmp_path / "tables"
    folder.mkdir()
    pruning.to_parquet(folder / "pruning_summary.parquet")
    share.to_parquet(folder / "share_summary.parquet")
    tuned.to_parquet(folder / "finetuning_summary.parquet")
    text = report(folder)
    assert text.count("Fine-tuned (learn), K = 5% per matrix:") == 1
    assert text.count("Fine-tuned (learn_all)") == 1
    table = text.split("Fine-tuned (learn_all), every parameter (no set):\n\n", 1)[1].split("\n\n", 1)[0]
    rows = table.splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == ["| none", "| every parameter (no set)"]
    assert rows[1].endswith("| 86.0 | 86.5 | 95.0 | 90.0 |")  # each base value less 5 points


def test_columns_pool_an_lm_eval_family_and_keep_generated_tasks_apart():
    tasks = ["mmlu_nutrition", "bpb_mmlu", "gsm8k_cot", "mmlu_abstract_algebra", "bpb_gsm8k", "toy_math"]
    assert columns(tasks) == {
        "math": ["toy_math"], "gsm8k bits/byte": ["bpb_gsm8k"], "mmlu bits/byte": ["bpb_mmlu"],
        "gsm8k_cot": ["gsm8k_cot"], "mmlu (mean of 2)": ["mmlu_abstract_algebra", "mmlu_nutrition"],
    }
    assert columns(["mmlu_nutrition", "gsm8k_cot"]) == {"gsm8k_cot": ["gsm8k_cot"], "mmlu_nutrition": ["mmlu_nutrition"]}


def test_a_family_is_the_mean_of_its_subtasks_and_bits_per_byte_is_not_a_percentage():
    base = {"gsm8k_cot": ("exact_match,strict-match", 0.05), "mmlu_a": ("acc,none", 0.2),
            "mmlu_b": ("acc,none", 0.4), "bpb_gsm8k": ("bits_per_byte,none", 0.98)}
    pruned = {"gsm8k_cot": 0.0, "mmlu_a": 0.3, "mmlu_b": 0.4, "bpb_gsm8k": 1.2346}
    rows = [{"model": "m", "method": "mathneuro", "control": "mmlu", "k": "5pct", "k_fraction": 0.05, "edit": "x0",
             "factor": 0.0, "n_samples": 24, "seed": 0, "suite": "s", "task": task, "metric": metric,
             "value": pruned[task], "stderr": 0.0, "base_value": value}
            for task, (metric, value) in base.items()]
    table = pd.DataFrame(rows).assign(change=lambda t: t["value"] - t["base_value"])
    table["relative_change"] = table["change"] / table["base_value"]
    frame = variant_table(summarize(table, EVAL_MEASURES), k="5pct", edit="x0", skill="gsm8k")
    assert list(frame.columns) == ["set", "size", "gsm8k bits/byte", "gsm8k_cot", "mmlu (mean of 2)"]
    assert frame.values.tolist() == [["none", "", "0.980", "5.0", "30.0"],
                                     ["MathNeuro (gsm8k − mmlu)", "", "1.235", "0.0", "35.0"]]


def test_layer_rows_split_the_set_by_layer_groups_and_module_types():
    from mathneuro.tables import layer_table

    # 4 layers x 2 modules of 100 entries; the set holds 10 + layer entries of q, 2 of v, per seed
    counts = pd.DataFrame([{"model": "m", "method": "mathneuro", "control": "c", "k": "5pct", "k_fraction": 0.05,
                            "n_samples": 8, "seed": seed, "layer": layer, "module": module, "numel": 100,
                            "selected": (10 + layer if module == "q_proj" else 2)}
                           for seed in (0, 1) for layer in range(4) for module in ("q_proj", "v_proj")])
    layers = layer_table(counts)
    table = summarize(layers, ["selected", "numel", "share_of_matrices", "share_of_selected"])
    rows = layer_rows(table, "mathneuro", "5pct", bins=2).set_index("where")
    total = sum(10 + layer + 2 for layer in range(4))
    assert list(rows.index) == ["layers 0–1", "layers 2–3", "q_proj", "v_proj"]
    assert rows.loc["layers 0–1", "% of the set"] == f"{100 * (10 + 11 + 4) / total:.1f}"
    assert rows.loc["layers 2–3", "% of those matrices selected"] == f"{100 * (12 + 13 + 4) / 400:.2f}"
    assert rows.loc["v_proj", "% of the set"] == f"{100 * 8 / total:.1f}"
    with pytest.raises(ValueError, match="no wanda sets"):
        layer_rows(table, "wanda", "5pct")


def layer_overlap_summary() -> pd.DataFrame:
    """Per seed pair (3 seeds), two sets, two sample counts, 4 layers x 2 modules of 100 entries:
    sets of 10 + layer entries, sharing layer + module index + pair entries (fewer at n = 1)."""
    rows = []
    for method, control in (("topk", "math"), ("mathneuro", "reading")):
        for n in (1, 10):
            for pair, (seed_a, seed_b) in enumerate([(0, 1), (0, 2), (1, 2)]):
                for layer in range(4):
                    for i, module in enumerate(("q_proj", "v_proj")):
                        size = 10 + layer
                        inter = (layer + i + pair) // (1 if n == 10 else 2)
                        rows.append({"model": "toy", "method": method, "control": control, "k": "5pct",
                                     "k_fraction": 0.05, "n_samples": n, "seed_a": seed_a, "seed_b": seed_b,
                                     "layer": layer, "module": module, "numel": 100, "size_a": size,
                                     "size_b": size, "intersection": inter, "union": 2 * size - inter,
                                     "jaccard": inter / (2 * size - inter), "overlap_rate": inter / size})
    table = pd.DataFrame(rows).astype({"layer": "Int64"})
    return table, summarize(table, OVERLAP_MEASURES, over=("seed_a", "seed_b"))


def test_layer_overlap_rows_pool_each_sets_matrices_per_layer_group_and_module_at_the_largest_n(tmp_path):
    table, summary = layer_overlap_summary()
    rows = layer_overlap_rows(summary, bins=2).set_index("where")
    assert list(rows.columns) == ["MathNeuro vs reading", "TopK(math)"]
    assert list(rows.index) == ["all", "layers 0–1", "layers 2–3", "q_proj", "v_proj"]
    largest = table[(table["n_samples"] == 10) & (table["method"] == "mathneuro")]

    def expected(part):  # means over the pairs of the summed counts
        per_pair = part.groupby(["seed_a", "seed_b"])[["intersection", "union", "size_a"]].sum().mean()
        inter, union, size = per_pair["intersection"], per_pair["union"], per_pair["size_a"]
        return f"{inter / union:.2f} ({inter / size:.2f})"

    assert rows.loc["all", "MathNeuro vs reading"] == expected(largest)
    assert rows.loc["layers 2–3", "MathNeuro vs reading"] == expected(largest[largest["layer"] >= 2])
    assert rows.loc["v_proj", "MathNeuro vs reading"] == expected(largest[largest["module"] == "v_proj"])
    # one pair: "all" is the consistency table's whole-model Jaccard
    one_pair = largest[(largest["seed_a"] == 0) & (largest["seed_b"] == 1)]
    single = layer_overlap_rows(summarize(one_pair, OVERLAP_MEASURES, over=("seed_a", "seed_b")))
    inter, union = one_pair["intersection"].sum(), one_pair["union"].sum()
    assert single.set_index("where").loc["all", "MathNeuro vs reading"].startswith(f"{inter / union:.2f} (")

    pruning, share = summaries()
    folder = tmp_path / "tables"
    folder.mkdir()
    pruning.to_parquet(folder / "pruning_summary.parquet")
    summary.to_parquet(folder / "layer_overlap_summary.parquet")
    section = report(folder).split("Where two identifications agree (n = 10)", 1)[1].split("\n\n")[1]
    assert section.splitlines()[0] == "| where | MathNeuro vs reading | TopK(math) |"
    everything = rows.loc["all"]
    assert section.splitlines()[2] == f"| all | {everything['MathNeuro vs reading']} | {everything['TopK(math)']} |"


@pytest.mark.parametrize("mixed", [False, True])
def test_the_report_names_the_versions_that_made_the_rows_and_warns_when_they_differ(tmp_path, mixed):
    from mathneuro.provenance import VERSION_COLUMNS

    made = {"code": "abc", "torch": "2.13.0", "transformers": "5.0", "lm_eval": "0.4.13", "snakemake": "9.0"}
    table = pruning_table().assign(**made)
    if mixed:  # one repeat of one set evaluated with another torch
        table.loc[(table["method"] == "wanda") & (table["seed"] == 1), "torch"] = "2.12.0"
    pruning = summarize(table, EVAL_MEASURES, joined=VERSION_COLUMNS)
    assert len(pruning) == len(summarize(pruning_table(), EVAL_MEASURES))  # versions split no group
    folder = tmp_path / "results" / "tables" / "toy"
    folder.mkdir(parents=True)
    pruning.to_parquet(folder / "pruning_summary.parquet")
    text = report(folder).split("\n\n", 1)[0]
    if not mixed:
        assert "Made by code abc, torch 2.13.0, transformers 5.0, lm-eval 0.4.13, Snakemake 9.0." in text
        assert "Mixed" not in text
    else:
        wanda = int((pruning["method"] == "wanda").sum())
        assert "**Mixed versions**" in text and "Made by" not in text
        assert f"torch 2.13.0 ({len(pruning)} rows), 2.12.0 ({wanda} rows)" in text
    assert "Made by" not in report_of(summaries()[0], tmp_path / "old")  # tables made before rows kept versions


def report_of(pruning: pd.DataFrame, root) -> str:
    folder = root / "results" / "tables" / "toy"
    folder.mkdir(parents=True)
    pruning.to_parquet(folder / "pruning_summary.parquet")
    return report(folder)
