"""The planted workflow (tests/configs/planted-tiny.yaml, the planted example at the tiny config's
sizes), run once: each planted model differs from its base in S alone, and putting S's base values
back gives the base bit for bit; the localization table holds every set of the study against S,
its counts as the masks on disk give them; the summary prints it; a finished run plans nothing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from dag import planned, snakemake
from test_study import validated
from safetensors.torch import load_file

from mathneuro.configs import compose
from mathneuro.masks import ParameterMask
from mathneuro.plant import restore
from mathneuro.study import Study
from mathneuro.summary import report
from mathneuro.tables import ALL_MODULES, LOCALIZATION_COUNTS

pytestmark = [pytest.mark.workflow]

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "configs" / "planted-tiny.yaml"
STUDY = Study(validated(compose([CONFIG])))
PLANTED_MODELS = STUDY.models.built_as("planted")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("planted")
    snakemake(workdir, CONFIG, "--cores", "2")
    return workdir


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_the_config_plants_both_shapes_in_one_shared_base():
    assert {STUDY.models[m]["plant"]["shape"] for m in PLANTED_MODELS} == {"entries", "neurons"}
    assert len({STUDY.plant_base(m) for m in PLANTED_MODELS}) == 1


@pytest.mark.parametrize("model", PLANTED_MODELS)
def test_a_planted_model_differs_from_its_base_in_s_alone_and_restoring_s_gives_the_base(run, model):
    base = weights(run / "results" / "bases" / STUDY.plant_base(model))
    planted = weights(run / "results" / "models" / model)
    truth = ParameterMask.load(run / "results" / model / "planted" / "truth.safetensors")
    spec = STUDY.models[model]["plant"]
    assert (truth.provenance["shape"], truth.provenance["share"]) == (spec["shape"], spec["share"])
    assert truth.count() > 0 and set(truth) < set(planted)  # block matrices only: embeddings, head frozen
    changed = 0
    for name, before in base.items():
        inside = truth[name] if name in truth else torch.zeros_like(before, dtype=torch.bool)
        assert torch.equal(planted[name][~inside], before[~inside]), name
        changed += int((planted[name][inside] != before[inside]).sum())
    assert changed > 0.9 * truth.count()  # training moved (nearly) every entry of S

    from mathneuro.toy import load_toy

    restored, _ = load_toy(run / "results" / "models" / model)
    restore(restored, base, truth)
    assert all(torch.equal(param, base[name]) for name, param in restored.named_parameters())


def test_the_localization_table_holds_every_set_of_the_study_against_s_as_the_masks_give_it(run):
    table = pd.read_parquet(run / "results" / "tables" / STUDY.name / "localization.parquet")
    overall = table[table["module"] == ALL_MODULES]
    expected = {(model, method, control, seed, STUDY.k.skill(k)) for model in PLANTED_MODELS
                for method, control, seed, k in STUDY.analyses.sets()}
    assert set(overall[["model", "method", "control", "seed", "k"]].itertuples(index=False, name=None)) == expected
    assert len(overall) == len(expected)
    for row in overall.itertuples():
        truth = ParameterMask.load(run / "results" / row.model / "planted" / "truth.safetensors")
        found = study_mask(run, row)
        hits = sum(int((found[n] & truth[n]).sum()) for n in truth)
        assert (row.numel, row.found, row.truth, row.hits) == (truth.numel(), found.count(), truth.count(), hits)
        assert row.precision == pytest.approx(hits / found.count())
        assert row.recall == pytest.approx(hits / truth.count())
        assert row.chance == pytest.approx(truth.count() / truth.numel())
    per_module = table[table["module"] != ALL_MODULES].groupby(["model", "method", "control", "seed", "k"])
    sums = per_module[LOCALIZATION_COUNTS].sum().reset_index()
    merged = sums.merge(overall, on=["model", "method", "control", "seed", "k"], suffixes=("", "_all"))
    for column in LOCALIZATION_COUNTS:  # the module types' rows add up to the row over all matrices
        assert (merged[column] == merged[f"{column}_all"]).all(), column


def study_mask(run: Path, row) -> ParameterMask:
    """A set of the study as its file holds it (Wanda's is the skill's TopK set)."""
    from mathneuro.methods import METHODS

    n, seed, k = STUDY.n_samples, row.seed, row.k
    if METHODS[row.method].top_k_set:
        path = run / "results" / row.model / "topk" / STUDY.skill / f"n{n}" / f"seed{seed}" / f"k{k}.safetensors"
    else:
        path = run / "results" / row.model / "masks" / STUDY.skill / row.method / row.control / f"n{n}" / \
            f"seed{seed}" / f"k{k}.safetensors"
    return ParameterMask.load(path)


def test_the_pruning_table_holds_s_and_random_sets_of_its_count_pruned_beside_the_found_sets(run):
    from mathneuro.analyses import PLANTED, PLANTED_RANDOM

    pruning = pd.read_parquet(run / "results" / "tables" / STUDY.name / "pruning.parquet")
    own = pruning[pruning["k"] == PLANTED]
    seeds = STUDY.seeds
    for model in PLANTED_MODELS:
        rows = own[own["model"] == model]
        assert set(zip(rows["method"], rows["seed"])) == {(PLANTED, seeds[0])} | {(PLANTED_RANDOM, s) for s in seeds}
        assert (rows["k_fraction"] == STUDY.models[model]["plant"]["share"]).all()
        assert (rows["factor"] == STUDY.edits[STUDY.config["pruning"]["edit"]]).all()
        found = pruning[(pruning["model"] == model) & (pruning["k"] != PLANTED)]
        assert set(rows["task"]) == set(found["task"]) and "change_low" in rows  # the paired statistics too
        truth = ParameterMask.load(run / "results" / model / "planted" / "truth.safetensors")
        for seed in seeds:
            drawn = ParameterMask.load(run / "results" / model / "planted" / "random" / f"seed{seed}.safetensors")
            assert drawn.counts() == truth.counts() and drawn != truth


def test_the_summary_prints_each_planted_models_localization(run):
    text = report(run / "results" / "tables" / STUDY.name)
    for model in PLANTED_MODELS:
        assert f"## Model {model}" in text
    assert text.count("Localization on planted models") == len(PLANTED_MODELS)


def test_a_finished_planted_run_plans_nothing(run):
    assert planned(run, CONFIG) == []
