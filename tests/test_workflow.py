"""The Snakemake workflow, run for real on the tiny config in a temporary directory, and its
caching contract: only new work runs, nothing finished reruns for a change it does not read."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from dag import ALWAYS, Job, descendants, fake_finished_run, planned, snakemake, write_config

from mathneuro import provenance
from mathneuro.analyses import FIGURES, NO_SET, TABLES
from mathneuro.configs import compose
from mathneuro.methods import METHODS
from mathneuro.tasks import project_configs

pytestmark = pytest.mark.workflow

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"
MODEL_CONFIGS = sorted((REPO / "configs" / "models").glob("*.yaml"))


@pytest.fixture(scope="module")
def run(tiny_run) -> Path:
    return tiny_run  # conftest.py: one real run for the whole session


def table(run: Path, name: str, summary: bool = False) -> pd.DataFrame:
    return pd.read_parquet(run / "results" / "tables" / "tiny" / f"{name}{'_summary' if summary else ''}.parquet")


def test_every_table_summary_and_figure_is_written(run):
    plots = run / "results" / "tables" / "tiny" / "plots"
    planted = any(m["path"] == "planted" for m in compose([TINY])["models"].values())
    empty = set() if planted else {"localization"}  # tests/test_planted.py runs a planted study
    made_by = provenance.versions(provenance.fingerprint())  # the tests' own checkout and libraries made it
    for name in TABLES:
        assert (len(table(run, name)) > 0) == (name not in empty), name
        assert (len(table(run, name, summary=True)) > 0) == (name not in empty), name
        assert "<table" in (plots / f"{name}.html").read_text(), name
        for rows in (table(run, name), table(run, name, summary=True)):  # every row: the versions that made it
            if len(rows):
                assert rows[provenance.VERSION_COLUMNS].drop_duplicates().to_dict("records") == [made_by], name
    for name in FIGURES:
        assert (plots / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name


def test_the_report_holds_every_figure_and_summary_with_its_caption(run):
    """snakemake --report: one self-contained HTML file, every figure and table summary in it,
    each under its analysis with the caption of report/<name>.rst."""
    snakemake(run, TINY, "--report", "results/report.html")
    page = (run / "results" / "report.html").read_text()
    for name in [*FIGURES, *TABLES]:
        assert f"{name}.png" in page or f"{name}.html" in page, name
    for name in FIGURES:  # each figure's caption opens with a bold title
        title = (REPO / "report" / f"{name}.rst").read_text().split("**")[1]
        assert title in page, name
    assert "on study <strong>tiny</strong>" in page  # the workflow's description, from the config
    pruning = table(run, "pruning")
    expected = {"model", "method", "control", "k", "k_fraction", "edit", "factor", "n_samples", "seed", "suite",
                "task", "metric", "value", "stderr", "base_value", "change", "relative_change"}
    assert expected <= set(pruning.columns)
    config = compose([TINY])
    assert set(pruning["method"]) == set(config["pruning"]["methods"])
    tasks = config["evaluation"]["suites"]["toy"]["tasks"]
    assert set(pruning["task"]) == {*tasks, *(leaf for t in tasks for leaf in leaves(t))}  # groups and their leaves
    assert (pruning["factor"] == 0.0).all() and set(pruning["seed"]) == {0, 1}
    assert pd.api.types.is_integer_dtype(pruning["n_samples"]) and pd.api.types.is_float_dtype(pruning["value"])
    assert ((pruning["value"] >= 0) & (pruning["value"] <= 1)).all()
    pd.testing.assert_series_equal(pruning["change"], pruning["value"] - pruning["base_value"], check_names=False)
    # One repeat per seed: every variant appears once per seed and task metric.
    keys = ["method", "control", "k", "seed", "task", "metric"]
    assert not pruning.duplicated(keys).any()
    summary = table(run, "pruning", summary=True)
    assert (summary["n_repeats"] == 2).all() and "value_mean" in summary and "value_std" in summary


def test_scaling_table_uses_the_scaling_factor(run):
    scaling = table(run, "scaling")
    assert set(scaling["method"]) == {"mathneuro"} and (scaling["factor"] == 1.1).all()
    assert scaling["base_value"].notna().all()


def test_data_efficiency_table_edits_the_sets_of_every_consistency_draw(run):
    """Pruning with the sets found from each consistency sample count and seed, MathNeuro and its
    random baseline; the largest count's rows are the pruning table's own evaluations."""
    config = compose([TINY])
    efficiency = table(run, "data_efficiency")
    assert set(efficiency["n_samples"]) == set(config["consistency"]["n_samples"])
    assert set(efficiency["seed"]) == set(config["consistency"]["seeds"])
    assert set(efficiency["method"]) == set(config["data_efficiency"]["methods"])
    assert set(efficiency["edit"]) == set(config["data_efficiency"]["edits"])
    assert set(efficiency["k"]) == {config["consistency"]["k"]} and efficiency["skill_task"].any()
    keys = ["method", "control", "k", "seed", "task", "metric", "value"]
    main = efficiency[efficiency["n_samples"] == config["identification"]["n_samples"]][keys]
    pruning = table(run, "pruning")
    assert len(main) and len(main.merge(pruning[keys])) == len(main)
    assert set(pruning["n_samples"]) == {config["identification"]["n_samples"]}


def test_share_and_layer_tables_count_the_real_masks(run):
    share = table(run, "share")
    assert set(share["method"]) == set(compose([TINY])["methods"])  # TopK sets of controls are no method
    wanda = share[share["method"] == "wanda"]
    assert set(wanda["control"]) == {"none"}
    layers = table(run, "layers")
    for row in wanda.itertuples():
        # Wanda = top-K of each matrix: int(numel * K) per matrix, so at most K of all targets.
        assert row.selected <= row.k_fraction * row.target_parameters
        assert row.selected > 0.9 * row.k_fraction * row.target_parameters
    mathneuro = share[share["method"] == "mathneuro"].set_index(["k", "seed"])["selected"]
    random = share[share["method"] == "random"].set_index(["k", "seed"])["selected"]
    pd.testing.assert_series_equal(mathneuro, random, check_names=False)  # same count, by construction
    chosen = share[share["selected"] > 0]
    assert len(chosen) > 0 and (chosen["share_of_model"] < chosen["share_of_targets"]).all()
    per_mask = layers.groupby(["method", "control", "k", "seed"])["selected"].sum()
    from_share = share.set_index(["method", "control", "k", "seed"])["selected"]
    pd.testing.assert_series_equal(per_mask.sort_index(), from_share.sort_index(), check_names=False)
    assert set(layers["layer"].dropna()) == {0, 1}


def test_against_a_single_control_the_union_set_is_mathneuros(run):
    """mathneuro_all subtracts the union of every control's TopK set: with one control, the
    MathNeuro set of that control, file for file (the add-a-control row checks two)."""
    from mathneuro import ParameterMask

    config = compose([TINY])
    (control,) = config["identification"]["controls"]
    masks = run / "results" / "toy" / "masks" / config["identification"]["skill"]
    union_sets = sorted((masks / "mathneuro_all" / control).rglob("*.safetensors"))
    assert union_sets
    for path in union_sets:
        relative = path.relative_to(masks / "mathneuro_all" / control)
        assert ParameterMask.load(path) == ParameterMask.load(masks / "mathneuro" / control / relative), relative


def test_consistency_table_has_overlap_per_sample_count(run):
    """Per sample count: the skill-specific sets against each control, and every data set's TopK."""
    config = compose([TINY])
    consistency = table(run, "consistency")
    ident = config["identification"]
    expected = {("mathneuro", c) for c in ident["controls"]} | {
        ("topk", d) for d in [ident["skill"], *ident["controls"]]
    }
    for n, group in consistency.groupby("n_samples"):
        assert set(zip(group["method"], group["control"])) == expected, n
    assert set(consistency["n_samples"]) == set(config["consistency"]["n_samples"])
    assert set(consistency["metric"]) == {"jaccard", "overlap_rate", "overlap_coefficient"}
    assert consistency["value"].between(0, 1).all()
    assert ((consistency["seed_a"] == 0) & (consistency["seed_b"] == 1)).all()


def test_the_sub_skill_study_prunes_each_set_on_every_task_of_its_suites_and_compares_the_sets(run):
    """Every sub-skill's set, every seed, every task of the suites the sub-skill study evaluates,
    with its change from the unedited model; and every ordered pair of the sets' overlaps."""
    import itertools

    config = compose([TINY])
    sub, seeds = config["subskills"], config["identification"]["seeds"]
    tasks = {t for suite in sub["suites"].values() for t in suite["tasks"]}
    for name in sub.get("evaluate") or []:
        tasks |= set(config["evaluation"]["suites"][name]["tasks"])
    matrix = table(run, "subskills")
    assert set(zip(matrix["skill"], matrix["seed"], matrix["task"])) == set(itertools.product(sub["skills"], seeds, tasks))
    assert (matrix["method"] == sub["method"]).all()
    assert ((matrix["value"] - matrix["base_value"] - matrix["change"]).abs() < 1e-12).all()
    assert (table(run, "pruning")["skill"] == config["identification"]["skill"]).all()
    overlaps = table(run, "subskill_overlap")
    pairs = set(itertools.permutations(sub["skills"], 2))
    assert set(zip(overlaps["skill_a"], overlaps["skill_b"], overlaps["seed"])) == {(*p, s) for p in pairs for s in seeds}
    assert overlaps["jaccard"].between(0, 1).all() and (overlaps["size_a"] > 0).all()


def test_every_evaluation_keeps_lm_evals_results_and_a_record_of_every_item(run, tiny_jobs):
    """Next to each tidy table: lm-eval's results JSON and one record per item of every task,
    multiple choice included, whose mean is lm-eval's value; the items' texts are kept with the
    unedited model's records only, and each row records the batch size it ran with."""
    config = compose([TINY])
    suite = config["evaluation"]["suites"]["toy"]
    evaluations = list((run / "results" / "toy" / "eval").rglob("toy.parquet"))  # suite toy
    planned_evaluations = [j for j in tiny_jobs if j.rule.startswith("evaluate") and j.wc["suite"] == "toy"]
    assert len(evaluations) == len(planned_evaluations) > 20  # every variant, and the unedited model
    for path in evaluations:
        results = json.loads(path.with_name("toy.results.json").read_text())
        evaluated = [leaf for t in suite["tasks"] for leaf in leaves(t)]  # a group's items are its leaves'
        assert set(results["versions"]) == {*suite["tasks"], *evaluated}
        samples = pd.read_parquet(path.with_name("toy.samples.parquet"))
        assert set(samples["task"]) == set(evaluated)
        for (task, metric), items in samples.groupby(["task", "metric"]):
            assert items["doc_id"].is_unique and len(items) == min(suite["limit"], leaf_size(run, task))
            assert items["score"].mean() == pytest.approx(results["results"][task][metric], abs=1e-12)
        for group in set(suite["tasks"]) - set(evaluated):  # a group's value: the mean of all its items
            mine = samples[samples["task"].isin(leaves(group)) & (samples["metric"] == "acc,none")]
            assert mine["score"].mean() == pytest.approx(results["results"][group]["acc,none"], abs=1e-12)
        choices = samples[samples["task"] != "toy_math"]
        assert choices["chosen"].notna().all() and choices["response"].notna().all()
        unedited = path.parent.name == "base"
        assert samples["prompt"].notna().all() if unedited else samples["prompt"].isna().all()
        batch = pd.read_parquet(path)
        assert (batch["batch_size"] == config["models"]["toy"]["eval_batch_size"]).all()
    samples = table(run, "samples")
    tuned = [config["finetune"][e] for e in config["finetuning"]["edits"]]
    no_set = [NO_SET] if any(spec["train"] == "all" and not spec.get("start") for spec in tuned) else []
    assert set(samples["method"]) == {"base", *config["pruning"]["methods"], *config["scaling"]["methods"], *no_set}


def leaves(task: str) -> list[str]:
    """The lm-eval tasks that a suite's task evaluates: a project group's members (toy_reading: its
    number and word items), else the task itself."""
    config = project_configs().get(task, {})
    return list(config["task"]) if "group" in config else [task]


def leaf_size(run: Path, leaf: str) -> int:
    """How many test items a toy task's leaf holds: a control's number or word items, else all."""
    from mathneuro import synthetic

    task = leaf.removeprefix("toy_").removesuffix("_numbers").removesuffix("_words")
    records = synthetic.read_jsonl(run / "results" / "data" / "synthetic" / task / "test.jsonl")
    if leaf.endswith(("_numbers", "_words")):
        records = [r for r in records if r["numeric"] == leaf.endswith("_numbers")]
    return len(records)


def results_json(run: Path, row) -> dict:
    """lm-eval's results of the evaluation a table row (or the unedited model, method 'base') comes from."""
    folder = run / "results" / row["model"] / "eval"
    if row["method"] == NO_SET:  # a fine-tuning run of every parameter from the unedited model
        folder = folder / row["skill"] / "all" / f"seed{row['seed']}" / row["edit"]
    elif row["method"] != "base":
        folder = (folder / row["skill"] / row["method"] / row["control"] / f"n{row['n_samples']}" / f"seed{row['seed']}"
                  / f"k{row['k']}" / row["edit"])
    else:
        folder = folder / "base"
    return json.loads((folder / f"{row['suite']}.results.json").read_text())["results"]


@pytest.mark.parametrize("name", ["pruning", "scaling", "data_efficiency", "subskills", "finetuning"])
def test_every_edit_tables_numbers_are_lm_evals_and_its_statistics_the_per_item_records(run, name):
    """Each row's value and base_value are lm-eval's in that variant's and the unedited model's
    results JSON, and the mean of their per-item records in the samples table; each row carries
    the exact McNemar test of those records (statsmodels), and its summary the pooled interval."""
    from statsmodels.stats.contingency_tables import mcnemar

    rows, samples = table(run, name), table(run, "samples")
    assert len(rows)
    keys = ["model", "skill", "method", "control", "n_samples", "seed", "k", "edit", "suite", "task", "metric"]
    samples = samples.assign(skill=samples["skill"].fillna(compose([TINY])["identification"]["skill"]))
    # a group's items are its leaves' (toy_reading: its number and word items), each by (leaf, doc_id)
    group_of = {leaf: group for group in project_configs() for leaf in leaves(group) if leaf != group}
    in_groups = samples[samples["task"].isin(group_of)]
    samples = pd.concat([samples.assign(group=samples["task"]), in_groups.assign(group=in_groups["task"].map(group_of))])
    keys = [*keys[:-2], "group", "metric"]
    records = {k: part.set_index(["task", "doc_id"])["score"].sort_index() for k, part in samples.groupby(keys, dropna=False)}
    base = {k[-3:]: part.set_index(["task", "doc_id"])["score"].sort_index()
            for k, part in samples[samples["method"] == "base"].groupby(["suite", "group", "metric"])}
    rows = rows.assign(group=rows["task"])
    for _, row in rows.iterrows():
        assert row["value"] == results_json(run, row)[row["task"]][row["metric"]]
        assert row["base_value"] == results_json(run, {**row, "method": "base"})[row["task"]][row["metric"]]
        mine, theirs = records[tuple(row[k] for k in keys)], base[(row["suite"], row["task"], row["metric"])]
        assert mine.index.equals(theirs.index)
        assert (mine.mean(), theirs.mean()) == pytest.approx((row["value"], row["base_value"]), abs=1e-12)
        table_2x2 = [[int(((theirs == a) & (mine == b)).sum()) for b in (1, 0)] for a in (1, 0)]
        assert row["p_value"] == pytest.approx(mcnemar(table_2x2, exact=True).pvalue, rel=1e-12)
        assert (row["lost"], row["gained"]) == (table_2x2[0][1], table_2x2[1][0])
    summary = table(run, name, summary=True)
    assert summary["p_holm"].notna().all() and (summary["change_low"] <= summary["change_mean"] + 1e-12).all()
    assert (summary["change_mean"] <= summary["change_high"] + 1e-12).all()


def test_the_consistency_tables_are_the_saved_sets_overlaps(run):
    """Recomputed from the sets on disk: each pair's sizes, intersection and Jaccard, whole and by layer."""
    import torch

    from mathneuro.masks import ParameterMask
    from mathneuro.tables import parameter_location

    config = compose([TINY])
    k = config["consistency"]["k"]
    results = run / "results" / "toy"
    whole, layers = table(run, "consistency"), table(run, "layer_overlap")
    checked = 0
    for (method, control, n), rows in whole.groupby(["method", "control", "n_samples"]):
        if method == "topk":
            files = [results / "topk" / control / f"n{n}" / f"seed{s}" / f"k{k}.safetensors" for s in (0, 1)]
        else:
            files = [results / "masks" / "math" / method / control / f"n{n}" / f"seed{s}" / f"k{k}.safetensors"
                     for s in (0, 1)]
        a, b = (ParameterMask.load(f) for f in files)
        flat = lambda mask: torch.cat([mask[name].flatten() for name in sorted(mask.counts())])  # noqa: E731
        x, y = flat(a), flat(b)
        intersection, union = int((x & y).sum()), int((x | y).sum())
        by_metric = rows.set_index("metric")
        assert by_metric.loc["jaccard", "value"] == pytest.approx(intersection / union)
        assert (by_metric["size_a"] == int(x.sum())).all() and (by_metric["intersection"] == intersection).all()
        per_layer = layers[(layers["method"] == method) & (layers["control"] == control) & (layers["n_samples"] == n)]
        for name in sorted(a.counts()):
            layer, module = parameter_location(name)
            row = per_layer[(per_layer["layer"] == layer) & (per_layer["module"] == module)]
            assert len(row) == 1
        assert per_layer["intersection"].sum() == intersection and per_layer["union"].sum() == union
        checked += 1
    assert checked == len(whole.groupby(["method", "control", "n_samples"])) > 0


def test_every_output_records_the_code_that_made_it_and_none_is_stale(run):
    from mathneuro import provenance

    results = run / "results"
    for kind in ["toy/stats", "toy/topk", "toy/masks", "toy/counts", "toy/eval", "toy/consistency", "toy/topk_consistency",
                 "tables/tiny"]:
        made = list(provenance.outputs(results / kind))
        assert made and all(provenance.read_fingerprint(p) for p in made), kind
    assert provenance.read_fingerprint(results / "models" / "toy" / "mathneuro_code.json")
    assert provenance.stale(results) == {}
    done = subprocess.run([sys.executable, "-m", "mathneuro.provenance", str(results)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == ""


def test_rerun_after_full_run_has_nothing_to_do(run):
    assert planned(run, TINY) == []


# --- Only new work runs: one row per kind of change, expectations from Snakemake's own DAG ---------


def new_label(taken, stem):
    return next(f"{stem}{i}" for i in range(2, 100) if f"{stem}{i}" not in taken)


def add_k(c):
    label = new_label(c["identification"]["k"], "k")
    c["identification"]["k"][label] = 0.03
    c["pruning"]["k"].append(label)


def add_edit(c):
    label = new_label(c["edits"], "x")
    c["edits"][label] = 1.5
    c["scaling"]["edits"].append(label)


def add_method(c):
    c["scaling"]["methods"].append(next(m for m in c["methods"] if m not in c["scaling"]["methods"]))


def add_control(c):
    label = new_label(c["datasets"], "control")
    c["datasets"][label] = copy.deepcopy(c["datasets"][c["identification"]["controls"][0]])
    c["identification"]["controls"].append(label)


def add_seed(c):
    c["identification"]["seeds"].append(max(c["identification"]["seeds"]) + 1)


def add_suite(c):
    first = next(iter(c["evaluation"]["suites"].values()))
    c["evaluation"]["suites"][new_label(c["evaluation"]["suites"], "suite")] = {**first, "tasks": first["tasks"][:1]}


def add_data_efficiency_edit(c):
    c["data_efficiency"]["edits"].append(next(e for e in c["edits"] if e not in c["data_efficiency"]["edits"]))


def add_consistency_n(c):
    c["consistency"]["n_samples"].append(next(n for n in (3, 50, 7) if n not in c["consistency"]["n_samples"]))


ADDITIONS = {"K": add_k, "edit": add_edit, "method": add_method, "control": add_control, "seed": add_seed,
             "suite": add_suite, "consistency sample count": add_consistency_n,
             "data efficiency edit": add_data_efficiency_edit}


def remove_k(c):
    c["pruning"]["k"].pop()


def remove_seed(c):
    c["identification"]["seeds"].pop()


def remove_method(c):
    c["pruning"]["methods"].pop()


def remove_consistency_n(c):
    c["consistency"]["n_samples"].pop(0)


def remove_data_efficiency_method(c):
    c["data_efficiency"]["methods"].pop()


REMOVALS = {"K": remove_k, "seed": remove_seed, "method": remove_method, "consistency sample count": remove_consistency_n,
            "data efficiency method": remove_data_efficiency_method}


def k_fraction(c):
    c["identification"]["k"][c["consistency"]["k"]] *= 1.2


def edit_factor(c):
    c["edits"][c["scaling"]["edits"][0]] += 0.1


def suite_limit(c):
    c["evaluation"]["suites"]["toy"]["limit"] += 1


def lape_threshold(c):
    lape = c.setdefault("lape", {})  # the tiny config takes the schema's thresholds
    lape["filter_rate"] = 0.9 * lape.get("filter_rate", 0.95)


def reads_statistics(job: Job) -> bool:
    """A set job of a method made from statistics (K and its own settings reach it as params)."""
    return job.rule == "select_set" and METHODS[job.wc["method"]].reads == "statistics"


# change -> the jobs that read the changed value (they and their descendants must rerun)
VALUES = {
    "K fraction": (k_fraction, lambda c, j: (j.rule in ("top_k", "snip_top_k") or reads_statistics(j)) and j.wc["k"] == c["consistency"]["k"]),
    "edit factor": (edit_factor, lambda c, j: j.rule == "evaluate" and j.wc["edit"] == c["scaling"]["edits"][0]),
    "suite limit": (suite_limit, lambda c, j: j.rule.startswith("evaluate") and j.wc["suite"] == "toy"),
    "LAPE threshold": (lape_threshold, lambda c, j: reads_statistics(j) and METHODS[j.wc["method"]].settings == "lape"),
}


def changed(tmp_path: Path, base: Path, change) -> tuple[dict, Path]:
    config = compose([base])
    change(config)
    return config, write_config(tmp_path / "changed.yaml", config)


def by_rule(jobs) -> dict[str, int]:
    return dict(sorted(Counter(j.rule for j in jobs).items()))


def assert_same_jobs(got: list[Job], expected: set[Job]):
    assert by_rule(got) == by_rule(expected)
    assert set(got) == expected


@pytest.fixture(scope="module")
def tiny_jobs(run) -> list[Job]:
    return planned(run, TINY, "--forceall")


@pytest.mark.parametrize("what", ADDITIONS)
def test_adding_an_item_plans_exactly_the_jobs_with_new_outputs(run, tiny_jobs, tmp_path, what):
    _, configfile = changed(tmp_path, TINY, ADDITIONS[what])
    finished = {f for job in tiny_jobs for f in job.outputs}
    expected = {j for j in planned(run, configfile, "--forceall") if j.rule in ALWAYS or j.outputs - finished}
    assert_same_jobs(planned(run, configfile), expected)


@pytest.mark.parametrize("what", REMOVALS)
def test_removing_an_item_plans_at_most_the_tables(run, tmp_path, what):
    _, configfile = changed(tmp_path, TINY, REMOVALS[what])
    assert {j.rule for j in planned(run, configfile)} <= ALWAYS


@pytest.mark.parametrize("what", VALUES)
def test_changing_a_value_reruns_what_reads_it_and_what_follows(run, tmp_path, what):
    change, reads = VALUES[what]
    config, configfile = changed(tmp_path, TINY, change)
    every = planned(run, configfile, "--forceall")
    readers = {j for j in every if reads(config, j)}
    assert readers, f"no job reads the {what}"
    expected = descendants(every, readers) | {j for j in every if j.rule in ALWAYS}
    assert_same_jobs(planned(run, configfile), expected)


def test_the_default_run_extended_by_one_k_plans_its_evaluations_only(tmp_path):
    """The issue's own case, on the default config: after a finished run, a new K plans its 6
    evaluations (3 methods x 2 seeds), no collection and no consistency job."""
    default = REPO / "config.yaml"
    fake_finished_run(tmp_path, default)
    _, configfile = changed(tmp_path, default, lambda c: (c["identification"]["k"].update({"2pct": 0.02}),
                                                          c["pruning"]["k"].append("2pct")))
    jobs = by_rule(planned(tmp_path, configfile))
    config = compose([default])
    assert jobs["evaluate"] == len(config["pruning"]["methods"]) * len(config["identification"]["seeds"])
    assert "collect_activations" not in jobs and "consistency" not in jobs and "evaluate_base" not in jobs


GROWING = [REPO / "config.yaml", REPO / "configs" / "models" / "llama-3.2-1b-it.yaml"]


@pytest.fixture(scope="module", params=GROWING, ids=lambda p: p.stem)
def finished_study(request, tmp_path_factory) -> tuple[Path, Path, set[str]]:
    """(workdir, configfile, outputs) of a finished run of the default or a paper study (faked)."""
    workdir = tmp_path_factory.mktemp(request.param.stem)
    finished = {f for job in fake_finished_run(workdir, request.param) for f in job.outputs}
    return workdir, request.param, finished


def test_editing_a_data_file_reruns_the_collections_that_read_it_and_what_follows(tmp_path):
    """After a finished run, a line appended to a local data file plans that data set's
    collections and their descendants, and nothing else."""
    config = compose([REPO / "config.yaml"])
    data = tmp_path / "data" / "reading.jsonl"
    data.parent.mkdir()
    data.write_text(json.dumps({"question": "Who wrote it?", "answer": "Ann"}) + "\n")
    config["datasets"]["reading"]["path"] = "data/reading.jsonl"
    configfile = write_config(tmp_path / "local.yaml", config)
    every = fake_finished_run(tmp_path, configfile)
    assert planned(tmp_path, configfile) == []
    with data.open("a") as handle:
        handle.write(json.dumps({"question": "Who read it?", "answer": "Bo"}) + "\n")
    readers = {j for j in every if any(Path(os.path.realpath(tmp_path / name)) == data for name in j.inputs)}
    assert {j.rule for j in readers} == {"collect_activations"}
    assert {j.wc["dataset"] for j in readers} == {"reading"}
    expected = descendants(every, readers) | {j for j in every if j.rule in ALWAYS}
    assert_same_jobs(planned(tmp_path, configfile), expected)


@pytest.mark.parametrize("what", ["K", "seed", "control", "suite", "consistency sample count"])
def test_no_finished_job_reruns_when_the_default_or_paper_study_grows(finished_study, tmp_path, what):
    """On a finished run, growing the study plans only jobs with a new output. The model files in
    configs/models share configs/paper.yaml, so one stands for all (their DAGs differ only in the
    model's label)."""
    workdir, configfile, finished = finished_study
    _, changed_file = changed(tmp_path, configfile, ADDITIONS[what])
    jobs = planned(workdir, changed_file)
    reruns = [j for j in jobs if j.rule not in ALWAYS and not j.outputs - finished]
    assert reruns == [], by_rule(reruns)
    assert {j.rule for j in jobs} - ALWAYS, "growing the study planned no new job"


# --- Studies never overwrite each other ---------------------------------------------------------


@pytest.fixture(scope="module")
def paper_outputs(tmp_path_factory) -> dict[str, set[str]]:
    outputs = {}
    for configfile in MODEL_CONFIGS:
        jobs = planned(tmp_path_factory.mktemp(configfile.stem), configfile, "--forceall")
        outputs[configfile.stem] = {f for j in jobs for f in j.outputs}
    return outputs


def test_paper_studies_write_their_own_tables_and_share_each_models_results(paper_outputs):
    singles = {name: files for name, files in paper_outputs.items() if name != "all"}
    tables = {name: {f for f in files if f.startswith("results/tables/")} for name, files in paper_outputs.items()}
    for name, files in tables.items():
        assert files and all(f.startswith(f"results/tables/{compose([REPO / 'configs/models' / (name + '.yaml')])['study']}/")
                                  for f in files)
    names = list(tables)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not tables[a] & tables[b], (a, b)
            if "all" not in (a, b):  # two models: no file in common but the lm-eval task folders
                assert {f for f in singles[a] & singles[b] if not f.startswith("results/tasks/")} == set()
    # The four-model study reuses every file of each model's own study (its x1.01/x1.1 scaling adds more).
    for name, files in singles.items():
        assert files - tables[name] <= paper_outputs["all"], name


def test_a_study_of_another_skill_reuses_the_models_statistics_and_overwrites_nothing(tmp_path):
    """configs/examples/reading.yaml (skill reading, control math) after a finished default run
    (skill math, control reading): it shares the model, statistics and TopK sets and plans only
    jobs whose every output is new (its sets, evaluations and tables)."""
    finished = {f for job in fake_finished_run(tmp_path, REPO / "config.yaml") for f in job.outputs}
    jobs = planned(tmp_path, REPO / "configs" / "examples" / "reading.yaml")
    assert {"select_set", "evaluate", "aggregate"} <= {j.rule for j in jobs}
    assert [j for j in jobs if j.outputs & finished] == []


def test_a_separate_control_k_plans_only_its_new_sets_and_q_equal_p_plans_nothing(tmp_path):
    """configs/examples/control-k.yaml (q = 2p) after a finished default run: no job writes a file
    the default wrote, no collection runs, the new TopK jobs are the controls' at q, and the new
    sets are those of the methods that read control TopK sets. The default with q = p stated
    (ratio 1) plans nothing but the tables."""
    from snakemake.utils import validate

    from mathneuro.study import Study

    default = REPO / "config.yaml"
    finished = {f for job in fake_finished_run(tmp_path, default) for f in job.outputs}
    configfile = REPO / "configs" / "examples" / "control-k.yaml"
    config = compose([configfile])
    validate(config, str(REPO / "schemas" / "config.schema.yaml"))
    study = Study(config)
    jobs = planned(tmp_path, configfile)
    assert [j for j in jobs if j.outputs & finished] == []
    assert "collect_activations" not in {j.rule for j in jobs}
    top_k = [j for j in jobs if j.rule == "top_k"]
    # the controls' TopK sets at q (the sub-skill sets' controls include the other sub-skills)
    assert top_k and all(j.wc["dataset"] != study.skill and j.wc["k"] in study.k.composite for j in top_k)
    made = {j.wc["method"] for j in jobs if j.rule == "select_set" and j.wc["skill"] == study.skill}
    assert made == {m for m in config["methods"] if study.k.of_set(m, "5pct") != "5pct"}

    same = compose([default])
    same["identification"]["control_k"] = {"ratio": 1}
    assert {j.rule for j in planned(tmp_path, write_config(tmp_path / "same.yaml", same))} <= ALWAYS


@pytest.mark.parametrize("configfile", MODEL_CONFIGS, ids=lambda p: p.stem)
def test_paper_configs_are_the_shared_paper_file_plus_a_model(configfile):
    config, paper = compose([configfile]), compose([REPO / "configs" / "paper.yaml"])
    assert len(config["models"]) == (4 if configfile.stem == "all" else 1)
    assert list(config["identification"]["k"].values()) == [0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15]
    assert config["pruning"]["k"] == list(config["identification"]["k"])
    assert set(config["scaling"]["k"]) == {"1pct", "5pct"}
    assert config["datasets"] == paper["datasets"]
    assert "auxiliary_train" not in yaml.safe_dump(config)


# --- Cluster: every GPU job to the GPU partition, decided in one place --------------------------------


@pytest.mark.parametrize("configfile", [TINY, REPO / "config.yaml", *MODEL_CONFIGS], ids=lambda p: p.stem)
def test_the_slurm_profile_sends_every_gpu_job_and_only_those_to_the_gpu_partition(tmp_path, configfile):
    """The plugin picks each job's partition from profiles/slurm/partitions.yaml by the job's own
    resources (its `gpu` comes from the model config): run here on every job of the dry run under
    the profile, as the plugin runs it at submission."""
    import logging
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file

    partitions = read_partition_file(REPO / "profiles" / "slurm" / "partitions.yaml")
    jobs = [j for j in planned(tmp_path, configfile, "--forceall", "--profile", str(REPO / "profiles" / "slurm"))
            if not j.local]
    assert any(j.res.get("gpu", 0) > 0 for j in jobs) == (configfile != REPO / "config.yaml")  # the toy: CPU only
    for job in jobs:
        fake = SimpleNamespace(resources=job.res, threads=1, name=job.rule, is_group=lambda: False)
        chosen = get_best_partition(partitions, fake, logging.getLogger("test"))
        assert chosen == ("gpu" if job.res.get("gpu", 0) > 0 else "cpu"), (job.rule, job.res)
        assert "slurm_partition" not in job.res  # nothing overrides the choice


# --- Bad configs ----------------------------------------------------------------------------------


def test_a_bad_config_fails_naming_the_key_before_any_job(tmp_path):
    """One smoke test of the check's place in the workflow: every case is a unit test of
    mathneuro.study (tests/test_study.py) and of the schema."""
    config = compose([TINY])
    config["pruning"]["k"] = ["3pct"]
    done = snakemake(tmp_path / "work", write_config(tmp_path / "bad.yaml", config), "--cores", "1", check=False)
    assert done.returncode != 0
    assert "pruning.k" in done.stdout + done.stderr
    assert not (tmp_path / "work" / "results").exists()


def test_lint_and_format_are_clean():
    lint = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules"], cwd=REPO,
                         capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_a_damaged_mask_stops_its_reader_naming_it_and_deleting_it_remakes_only_what_depends_on_it(run, tmp_path):
    """A mask cut short: the next job that reads it (an evaluation a new scaling factor adds)
    fails naming the file and the rule that remakes it; deleting it remakes that set and reruns
    exactly what depends on it (computed from the DAG), every other output kept as it was."""
    import shutil

    study = tmp_path / "run"
    shutil.copytree(run, study, symlinks=True)
    config = compose([TINY])
    config["edits"]["x0.5"] = 0.5
    config["scaling"]["edits"] = [*config["scaling"]["edits"], "x0.5"]
    configfile = write_config(tmp_path / "more.yaml", config)
    mask = Path("results/toy/masks/math/mathneuro/reading/n8/seed0/k5pct.safetensors")
    data = (study / mask).read_bytes()
    (study / mask).write_bytes(data[: len(data) // 2])
    failed = snakemake(study, configfile, "--cores", "2", check=False)
    assert failed.returncode != 0
    log = "".join(p.read_text() for p in (study / "logs" / "evaluate").rglob("*.log"))
    assert f"{mask} cannot be read" in log and "rule select_set writes it anew" in log
    (study / mask).unlink()
    every = planned(study, configfile, "--forceall")
    maker = next(job for job in every if str(mask) in job.outputs)
    expected = descendants(every, {maker}) | {j for j in planned(study, configfile) if j.outputs.isdisjoint(
        {f for job in every for f in job.outputs if (study / f).exists()})}
    times = {f: (study / f).stat().st_mtime_ns for job in every for f in job.outputs if (study / f).exists()}
    assert set(planned(study, configfile)) == expected
    snakemake(study, configfile, "--cores", "2")
    rerun = {f for job in expected for f in job.outputs}
    assert all((study / f).stat().st_mtime_ns == t for f, t in times.items() if f not in rerun)


def test_finetuning_trains_each_set_and_the_whole_model_and_keeps_only_what_it_trained(run):
    """Every run of the fine-tuning analysis evaluated, with its scope; a set's run keeps exactly
    the set's entries (a sparse delta), a whole-model run every parameter, once per repeat."""
    from mathneuro import ParameterMask
    from mathneuro.finetune import load_trained

    config = compose([TINY])
    tuning, seeds = config["finetuning"], config["identification"]["seeds"]
    rows = table(run, "finetuning")
    per_set = [e for e in tuning["edits"] if config["finetune"][e]["train"] == "set" or config["finetune"][e].get("start")]
    unedited = [e for e in tuning["edits"] if e not in per_set]
    assert per_set and unedited  # the tiny config has both kinds
    assert set(zip(rows["method"], rows["seed"], rows["k"], rows["edit"], rows["n_samples"])) == {
        *[(m, s, k, e, config["identification"]["n_samples"]) for m in tuning["methods"] for s in seeds
          for k in tuning["k"] for e in per_set],
        *[(NO_SET, s, NO_SET, e, 0) for s in seeds for e in unedited]}  # one evaluation per repeat, no set
    assert (rows["trained"] == rows["edit"].map(lambda e: config["finetune"][e]["train"])).all()
    assert table(run, "finetuning", summary=True)["p_value"].notna().all()
    results = run / "results" / "toy"
    for seed in seeds:
        for edit in tuning["edits"]:
            spec = config["finetune"][edit]
            if spec["train"] == "set":
                path = results / "finetuned" / "math" / "mathneuro" / "reading" / "n8" / f"seed{seed}" / "k5pct"
                trained, meta = load_trained(path / f"{edit}.safetensors")
                mask = ParameterMask.load(results / "masks" / "math" / "mathneuro" / "reading" / "n8" / f"seed{seed}"
                                          / "k5pct.safetensors")
                assert sum(v.numel() for v in trained.values()) == mask.count() and meta["scope"] == "set"
            else:
                trained, meta = load_trained(results / "finetuned" / "math" / "all" / f"seed{seed}" / f"{edit}.safetensors")
                assert meta["scope"] == "all" and len(trained) > 10  # every parameter of the model


def test_every_edit_exports_as_a_checkpoint_holding_exactly_that_edit(run, tmp_path):
    """`export_model` on request, for each kind of edit: a set scaled by a factor, a fine-tuning
    edit of a set (its trained values in the set's entries, every other weight the base's) and a
    whole-model run (every trained tensor). Each exported folder loads with transformers alone."""
    import shutil

    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from mathneuro import ParameterMask

    study = tmp_path / "run"
    shutil.copytree(run, study, symlinks=True)
    config = compose([TINY])
    results = Path("results") / "toy"
    variant = Path("math") / "mathneuro" / "reading" / "n8" / "seed0"
    (per_set,) = [e for e in config["finetuning"]["edits"] if config["finetune"][e]["train"] == "set"]
    (whole,) = [e for e in config["finetuning"]["edits"] if config["finetune"][e]["train"] == "all"]
    factor = next(e for e, f in config["edits"].items() if f not in (0.0, 1.0))
    exports = {"scaled": results / "export" / variant / "k5pct" / factor,
               "set": results / "export" / variant / "k5pct" / per_set,
               "all": results / "export" / "math" / "all" / "seed0" / whole}
    snakemake(study, TINY, "--cores", "2", *map(str, exports.values()))

    def weights(folder: Path) -> dict[str, torch.Tensor]:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        return {name: p.detach() for name, p in model.named_parameters()}

    base = weights(study / "results" / "models" / "toy")
    mask = ParameterMask.load(study / results / "masks" / variant / "k5pct.safetensors")
    trained_set = load_file(study / results / "finetuned" / variant / "k5pct" / f"{per_set}.safetensors")
    trained_all = load_file(study / results / "finetuned" / "math" / "all" / "seed0" / f"{whole}.safetensors")
    got = {kind: weights(study / folder) for kind, folder in exports.items()}
    assert set(trained_all) <= set(base) and set(trained_set) <= set(mask)
    for name, weight in base.items():
        selected = mask[name] if name in set(mask) else torch.zeros_like(weight, dtype=torch.bool)
        assert torch.equal(got["scaled"][name], torch.where(selected, weight * config["edits"][factor], weight)), name
        expected = weight.clone()
        if name in trained_set:
            expected[selected] = trained_set[name]
        assert torch.equal(got["set"][name], expected), name
        assert torch.equal(got["all"][name], trained_all.get(name, weight)), name
    assert any(not torch.equal(got["set"][n], base[n]) for n in trained_set)  # the edits changed something


def test_the_agreement_of_snips_sets_and_mathneuros_is_the_saved_sets_overlap(run):
    from mathneuro import ParameterMask
    from mathneuro.masks import overlap

    config = compose([TINY])
    rows = table(run, "agreement")
    assert set(zip(rows["method_a"], rows["method_b"])) == {("mathneuro", "snip"), ("snip", "mathneuro")}
    assert set(rows["seed"]) == set(config["identification"]["seeds"])
    masks = run / "results" / "toy" / "masks" / "math"
    for _, row in rows[rows["method_a"] == "mathneuro"].iterrows():
        sets = [ParameterMask.load(masks / m / row["control"] / f"n{row['n_samples']}" / f"seed{row['seed']}"
                                   / f"k{row['k']}.safetensors") for m in (row["method_a"], row["method_b"])]
        assert row["jaccard"] == pytest.approx(overlap(*sets)["jaccard"])
