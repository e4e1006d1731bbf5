"""A real pretrained model through the whole DAG, offline: SmolLM2-135M-Instruct from its Q4_1 GGUF
file (ci/fetch_smollm2.sh), dequantized once, on GSM8K and MMLU from ../shared/data, at the sizes
of tests/configs/smollm2-tiny.yaml. Each test reads the one finished run.

A missing model file or data folder fails the run: this test is never skipped."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import torch
from dag import snakemake, write_config

from mathneuro.analyses import FIGURES, TABLES
from mathneuro.configs import compose
from mathneuro.tables import EVAL_COLUMNS, SAMPLE_COLUMNS

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "configs" / "smollm2-tiny.yaml"
SHARED_DATA = REPO.parent / "shared" / "data"
EVAL_TABLES = ["pruning", "scaling", "data_efficiency"]


def absolute(path: str) -> str:
    """A path of the config (relative to the repository root, as the example's) made absolute."""
    return str((REPO / path).resolve())


def absolute_config() -> dict:
    """tests/configs/smollm2-tiny.yaml with the model folder and local_data absolute, so that the
    workflow can run in any folder."""
    config = compose([CONFIG])
    for model in config["models"].values():
        model["path"] = absolute(model["path"])
    for entry in config["local_data"].values():
        if "files" in entry:
            entry["files"] = {split: absolute(f) if isinstance(f, str) else [absolute(p) for p in f]
                              for split, f in entry["files"].items()}
        if "mmlu_release" in entry:
            entry["mmlu_release"] = absolute(entry["mmlu_release"])
    return config


CONFIG_DATA = absolute_config()
STUDY = CONFIG_DATA["study"]
(LABEL, MODEL) = next(iter(CONFIG_DATA["models"].items()))
IDENT = CONFIG_DATA["identification"]
SKILL, (CONTROL,) = IDENT["skill"], IDENT["controls"]
N, SEED, K = IDENT["n_samples"], IDENT["seeds"][0], CONFIG_DATA["pruning"]["k"][0]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    gguf = Path(MODEL["path"]) / MODEL["gguf"]
    assert gguf.is_file(), f"no model file {gguf}: run `bash ci/fetch_smollm2.sh` (ci/setup.sh runs it)"
    for entry in CONFIG_DATA["local_data"].values():
        for path in [*entry.get("files", {}).values(), entry.get("mmlu_release")]:
            assert path is None or Path(path).exists(), f"no local data {path} (expected under {SHARED_DATA})"
    workdir = tmp_path_factory.mktemp("smollm2")
    configfile = write_config(tmp_path_factory.mktemp("smollm2-config") / "smollm2-tiny.yaml", CONFIG_DATA)
    with pytest.MonkeyPatch.context() as patch:  # nothing may reach the hub
        for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            patch.setenv(flag, "1")
        snakemake(workdir, configfile, "--cores", "2")
    return workdir


def table(run: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(run / "results" / "tables" / STUDY / f"{name}.parquet")


def test_the_model_was_dequantized_from_the_gguf_file(run):
    folder = run / "results" / "models" / LABEL
    assert (folder / "config.json").is_file() and list(folder.glob("*.safetensors"))
    assert (folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file()


def test_every_table_is_written_non_empty_and_typed(run):
    plots = run / "results" / "tables" / STUDY / "plots"
    from mathneuro.methods import METHODS, SPECIFIC

    off = set() if CONFIG_DATA.get("subskills") else {"subskills", "subskill_overlap"}  # no sub-skill study here
    if not (CONFIG_DATA.get("finetuning") or {}).get("edits"):
        off.add("finetuning")
    if not any(METHODS[m].importance != METHODS[SPECIFIC].importance for m in CONFIG_DATA["methods"]):
        off.add("agreement")  # no sets ranked by another importance (SNIP's) to compare
    if not any(m["path"] == "planted" for m in CONFIG_DATA["models"].values()):
        off.add("localization")  # no planted model: no set to score against a planted one
    for name in TABLES:
        assert (len(table(run, name)) > 0) == (name not in off), name
        assert (len(table(run, f"{name}_summary")) > 0) == (name not in off), name
        assert "<table" in (plots / f"{name}.html").read_text(), name
    for name in FIGURES:
        assert (plots / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
    samples = table(run, "samples")
    assert len(samples) > 0
    assert {c: str(samples[c].dtype) for c in SAMPLE_COLUMNS} == SAMPLE_COLUMNS
    suites = CONFIG_DATA["evaluation"]["suites"]
    tasks = {t for suite in suites.values() for t in suite["tasks"]}
    for name in EVAL_TABLES:
        frame = table(run, name)
        assert {c: str(frame[c].dtype) for c in EVAL_COLUMNS} == EVAL_COLUMNS, name
        assert pd.api.types.is_bool_dtype(frame["skill_task"]) and frame["skill_task"].notna().all(), name
        assert set(frame["task"]) == tasks, name
        skill = frame["task"].isin(["gsm8k_cot", "bpb_gsm8k"])
        assert frame.loc[skill, "skill_task"].all() and not frame.loc[~skill, "skill_task"].any(), name
        assert frame.loc[frame["task"].str.startswith("mmlu_"), "metric"].eq("acc,none").all(), name
        bpb = frame[frame["task"].str.startswith("bpb_")]
        assert set(bpb["task"]) == {"bpb_gsm8k", "bpb_mmlu"}, name
        assert (bpb["metric"] == "bits_per_byte,none").all(), name
        for column in ("value", "base_value"):
            assert bpb[column].map(math.isfinite).all() and (bpb[column] > 0).all(), (name, column)
        accuracy = frame[~frame["task"].str.startswith("bpb_")]
        assert accuracy["value"].between(0, 1).all(), name
    pruning = table(run, "pruning")
    assert set(pruning["method"]) == set(CONFIG_DATA["pruning"]["methods"]) and (pruning["factor"] == 0).all()
    scaling = table(run, "scaling")
    assert set(scaling["method"]) == set(CONFIG_DATA["scaling"]["methods"]) and (scaling["factor"] == 1.1).all()
    # Zeroing 5% of the matrices' entries moves a real model's bits per byte: the edit reached the model.
    assert (pruning.loc[pruning["task"].str.startswith("bpb_"), "change"].abs() > 1e-6).all()
    # The paper's point, on the bits per byte: pruning the MathNeuro set costs GSM8K far more than
    # MMLU (here about +70% against +4%).
    mathneuro = pruning[pruning["method"] == "mathneuro"].set_index("task")["relative_change"]
    assert mathneuro["bpb_gsm8k"] > 2 * mathneuro["bpb_mmlu"] > 0
    efficiency = table(run, "data_efficiency")
    assert set(efficiency["n_samples"]) == set(CONFIG_DATA["consistency"]["n_samples"])
    assert set(efficiency["seed"]) == set(CONFIG_DATA["consistency"]["seeds"])


def test_the_unedited_models_gsm8k_generations_are_real_text(run):
    from transformers import AutoTokenizer

    base = run / "results" / LABEL / "eval" / "base"
    (suite,) = [name for name, s in CONFIG_DATA["evaluation"]["suites"].items() if "gsm8k_cot" in s["tasks"]]
    samples = pd.read_parquet(base / f"{suite}.samples.parquet")
    generations = samples[samples["task"] == "gsm8k_cot"]
    limit = CONFIG_DATA["evaluation"]["suites"][suite]["limit"]
    assert generations["doc_id"].nunique() == limit
    tokenizer = AutoTokenizer.from_pretrained(run / "results" / "models" / LABEL)
    for response in generations["response"]:
        assert isinstance(response, str) and response.strip(), response
        tokens = len(tokenizer(response, add_special_tokens=False)["input_ids"])
        assert tokens > 8, response  # more than a few tokens: not cut at the first one
        assert any(c.isdigit() for c in response), response
        assert len(response.split()) > 4, response
    assert generations["prompt"].str.contains("Question:|Q:", regex=True).all()  # lm-eval's CoT prompt
    # The study's samples table holds the same base records.
    study = table(run, "samples")
    in_table = study[(study["method"] == "base") & (study["task"] == "gsm8k_cot")]
    assert sorted(in_table["response"]) == sorted(generations["response"])


def test_pruning_the_mathneuro_set_zeroes_exactly_its_weights(run):
    from mathneuro import ParameterMask, apply_mask
    from mathneuro.models import load_model

    results = run / "results" / LABEL
    mask = ParameterMask.load(results / "masks" / SKILL / "mathneuro" / CONTROL / f"n{N}" / f"seed{SEED}" / f"k{K}.safetensors")
    topk = {d: ParameterMask.load(results / "topk" / d / f"n{N}" / f"seed{SEED}" / f"k{K}.safetensors")
            for d in (SKILL, CONTROL)}
    assert 0 < mask.count() < topk[SKILL].count()
    assert mask == topk[SKILL] - topk[CONTROL]  # math-specific = TopK(math) - TopK(control)

    model, _ = load_model(str(run / "results" / "models" / LABEL), dtype="float32", device="cpu", offline=True)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    assert set(mask) <= set(before) and len(mask) > 1
    apply_mask(model, mask, CONFIG_DATA["edits"][CONFIG_DATA["pruning"]["edit"]])
    changed = 0
    for name, param in model.named_parameters():
        after, original = param.detach(), before[name]
        if name not in mask:
            assert torch.equal(after, original), name
            continue
        selected = mask[name]
        assert (after[selected] == 0).all(), name
        assert torch.equal(after[~selected], original[~selected]), name
        changed += int((original[selected] != 0).sum())
    assert changed > 0.99 * mask.count()  # the set's weights were not already zero


def test_the_consistency_table_compares_mathneuro_and_the_topk_sets(run):
    consistency = table(run, "consistency")
    assert set(consistency["method"]) == {"mathneuro", "topk"}
    pairs = set(zip(consistency["method"], consistency["control"]))
    assert pairs == {("mathneuro", CONTROL), ("topk", SKILL), ("topk", CONTROL)}
    assert set(consistency["n_samples"]) == set(CONFIG_DATA["consistency"]["n_samples"])
    assert set(consistency["metric"]) == {"jaccard", "overlap_rate", "overlap_coefficient"}
    assert consistency["value"].between(0, 1).all()
    assert (consistency["size_a"] > 0).all() and (consistency["size_b"] > 0).all()
    # Two draws of 24 texts agree more than two draws of 4 on the skill's TopK set.
    jaccard = consistency[(consistency["metric"] == "jaccard") & (consistency["method"] == "topk")
                          & (consistency["control"] == SKILL)].set_index("n_samples")["value"]
    assert jaccard[max(jaccard.index)] > jaccard[min(jaccard.index)]
