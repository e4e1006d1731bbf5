"""The Snakemake workflow, run for real on the tiny config in a temporary directory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO

pytestmark = pytest.mark.workflow

TINY = REPO / "tests" / "configs" / "tiny.yaml"
TABLES = ["pruning", "scaling", "consistency", "layers", "share"]


def snakemake(workdir: Path, *args: str, configfile: Path = TINY, check: bool = True) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(configfile), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500)
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


def scheduled(workdir: Path, configfile: Path) -> dict[str, int]:
    """Jobs a dry run would execute, by rule, from Snakemake's own job table."""
    done = snakemake(workdir, "-n", configfile=configfile)
    text = done.stdout + done.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:")[1].split("Reasons:")[0] if "Reasons:" in text else text.split("Job stats:")[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


def variant_config(tmp_path: Path, name: str, change) -> Path:
    config = yaml.safe_load(TINY.read_text())
    change(config)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("workflow")
    snakemake(workdir, "--cores", "2")
    return workdir


def table(run: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(run / "results" / "tables" / f"{name}.parquet")


def test_every_table_summary_and_plot_is_written(run):
    for name in TABLES:
        assert len(table(run, name)) > 0, name
        assert len(pd.read_parquet(run / "results" / "tables" / f"{name}_summary.parquet")) > 0, name
        assert (run / "results" / "tables" / "plots" / f"{name}.png").stat().st_size > 1000, name


def test_pruning_table_is_tidy_and_carries_the_baseline(run):
    pruning = table(run, "pruning")
    expected = {"model", "method", "control", "k", "k_fraction", "edit", "factor", "n_samples", "seed", "suite",
                "task", "metric", "value", "stderr", "base_value", "change", "relative_change"}
    assert expected <= set(pruning.columns)
    assert set(pruning["method"]) == {"mathneuro", "wanda", "random", "lape"}
    assert set(pruning["task"]) == {"toy_math", "toy_reading", "toy_facts"}
    assert (pruning["factor"] == 0.0).all() and set(pruning["seed"]) == {0, 1}
    assert pd.api.types.is_integer_dtype(pruning["n_samples"]) and pd.api.types.is_float_dtype(pruning["value"])
    assert ((pruning["value"] >= 0) & (pruning["value"] <= 1)).all()
    pd.testing.assert_series_equal(pruning["change"], pruning["value"] - pruning["base_value"], check_names=False)
    # One repeat per seed: every variant appears once per seed and task metric.
    keys = ["method", "control", "k", "seed", "task", "metric"]
    assert not pruning.duplicated(keys).any()
    summary = pd.read_parquet(run / "results" / "tables" / "pruning_summary.parquet")
    assert (summary["n_repeats"] == 2).all() and "value_mean" in summary and "value_std" in summary


def test_scaling_table_uses_the_scaling_factor(run):
    scaling = table(run, "scaling")
    assert set(scaling["method"]) == {"mathneuro"} and (scaling["factor"] == 1.1).all()
    assert scaling["base_value"].notna().all()


def test_share_and_layer_tables_count_the_real_masks(run):
    share = table(run, "share")
    wanda = share[share["method"] == "wanda"]
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


def test_consistency_table_has_overlap_per_sample_count(run):
    consistency = table(run, "consistency")
    assert set(consistency["n_samples"]) == {2, 8}
    assert set(consistency["metric"]) == {"jaccard", "overlap_rate", "overlap_coefficient"}
    assert consistency["value"].between(0, 1).all()
    assert ((consistency["seed_a"] == 0) & (consistency["seed_b"] == 1)).all()


def test_rerun_after_full_run_has_nothing_to_do(run):
    assert scheduled(run, TINY) == {}


def test_adding_an_evaluation_suite_schedules_only_evaluation_and_aggregation(run, tmp_path):
    config = variant_config(
        tmp_path, "suite", lambda c: c["evaluation"]["suites"].update(math={"tasks": ["toy_math"], "limit": 2})
    )
    jobs = scheduled(run, config)
    assert jobs.get("evaluate", 0) > 0 and jobs.get("evaluate_base") == 1
    assert set(jobs) <= {"evaluate", "evaluate_base", "aggregate", "plots", "all"}


def test_adding_a_k_value_collects_no_activations(run, tmp_path):
    def add_k(c):
        c["identification"]["k"]["20pct"] = 0.2
        c["pruning"]["k"].append("20pct")

    jobs = scheduled(run, variant_config(tmp_path, "k", add_k))
    assert jobs.get("select_masks", 0) > 0 and jobs.get("evaluate", 0) > 0
    assert "collect_activations" not in jobs and "train_toy_model" not in jobs and "evaluate_base" not in jobs


def test_changing_n_samples_recollects_only_that_sample_count(run, tmp_path):
    def change_n(c):
        c["identification"]["n_samples"] = 6

    jobs = scheduled(run, variant_config(tmp_path, "n", change_n))
    assert jobs["collect_activations"] == 2 * 2  # two data sets x two seeds at n=6
    assert jobs["collect_draws"] == 2 * 2  # n=8 is no longer the main count: the draws now reach it
    assert "train_toy_model" not in jobs and "evaluate_base" not in jobs and "synthetic_data" not in jobs


def test_changing_consistency_counts_reruns_only_the_draws(run, tmp_path):
    jobs = scheduled(run, variant_config(tmp_path, "draws", lambda c: c["consistency"]["n_samples"].append(4)))
    assert jobs["collect_draws"] == 2 * 2 and jobs["select_draws"] == 2
    assert jobs["consistency"] == 2  # n=2 and n=4; n=8 is the main identification, untouched
    assert set(jobs) <= {"collect_draws", "select_draws", "consistency", "aggregate", "plots", "all"}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda c: c["identification"]["k"].update(big=1.5), "1.5"),
        (lambda c: c["identification"].update(controls=["race"]), "identification.controls"),
        (lambda c: c["pruning"].update(k=["3pct"]), "pruning.k"),
        (lambda c: c["datasets"]["math"].update(n=10), "datasets.math.n"),
        (lambda c: c["datasets"]["math"].update(source="ftp"), "ftp"),
        (lambda c: c.update(identificaton={}), "identificaton"),
    ],
)
def test_bad_config_fails_validation_naming_the_key_before_any_job(tmp_path, change, named):
    config = variant_config(tmp_path, "bad", change)
    done = snakemake(tmp_path / "work", "--cores", "1", configfile=config, check=False)
    assert done.returncode != 0
    assert named in done.stdout + done.stderr
    assert not (tmp_path / "work" / "results").exists()


@pytest.mark.parametrize("configfile", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_paper_configs_dry_run(tmp_path, configfile):
    jobs = scheduled(tmp_path, configfile)
    assert jobs["collect_activations"] > 0 and jobs["evaluate"] > 0


def test_lint_and_format_are_clean():
    lint = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules"], cwd=REPO,
                         capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
