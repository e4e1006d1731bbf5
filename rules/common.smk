"""Validation, wildcard constraints, path builders and input functions shared by every stage."""

import math
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from mathneuro.data import validate_spec

validate(config, "../schemas/config.schema.yaml")

ID = config["identification"]
EVAL = config["evaluation"]
SKILL = ID["skill"]
CONTROLS = ID["controls"]
N_MAIN = ID["n_samples"]
SEEDS = ID["seeds"]
CONSISTENCY = config["consistency"]
# Sample counts of the consistency analysis other than the main one: each is the first n texts
# of one draw, all collected in one pass per (data set, seed) by rule collect_draws.
DRAW_N = sorted(set(CONSISTENCY["n_samples"]) - {N_MAIN})


def canonical(value):
    """Dicts with sorted keys, recursively: reordering the config must not rerun jobs."""
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


K = dict(
    sorted(ID["k"].items(), key=lambda item: item[1])
)  # label -> fraction, smallest first
EDITS = config["edits"]  # label -> weight factor
LAPE_K = (
    "auto"  # LAPE picks its own neurons (top_rate), so it has one mask, not one per K
)
SPECIFIC = ("mathneuro", "random")  # methods whose mask depends on the control set


def config_error(message):
    raise WorkflowError(f"config: {message}")


def check_config():
    """Cross-references the schema cannot express, named by their config keys."""
    datasets, models = config["datasets"], config["models"]
    for key, name in [("identification.skill", SKILL)] + [
        ("identification.controls", c) for c in CONTROLS
    ]:
        if name not in datasets:
            config_error(
                f"{key} names data set {name!r}, not among datasets: {sorted(datasets)}"
            )
    if SKILL in CONTROLS:
        config_error(
            f"identification.controls must not contain the skill data set {SKILL!r}"
        )
    for key, labels in [
        ("pruning.k", config["pruning"]["k"]),
        ("scaling.k", config["scaling"]["k"]),
        ("consistency.k", [config["consistency"]["k"]]),
    ]:
        for label in labels:
            if label not in K:
                config_error(
                    f"{key} names K {label!r}, not among identification.k: {sorted(K)}"
                )
    for key, labels in [
        ("pruning.edit", [config["pruning"]["edit"]]),
        ("scaling.edits", config["scaling"]["edits"]),
    ]:
        for label in labels:
            if label not in EDITS:
                config_error(
                    f"{key} names edit {label!r}, not among edits: {sorted(EDITS)}"
                )
    for key in ("pruning", "scaling"):
        for method in config[key]["methods"]:
            if method not in config["methods"]:
                config_error(
                    f"{key}.methods has {method!r}, which is not in methods: {config['methods']}"
                )
    for name, spec in datasets.items():
        for reserved in ("n", "seed"):
            if reserved in spec:
                config_error(
                    f"datasets.{name}.{reserved} is set by the workflow "
                    "(identification.n_samples / seeds, consistency.n_samples / seeds); remove it"
                )
        try:
            validate_spec({**spec, "n": 1, "seed": 0})
        except ValueError as err:
            config_error(f"datasets.{name}: {err}")
    for name, model in models.items():
        if model["path"] == "toy" and (
            "toy_model" not in config or "synthetic" not in config
        ):
            config_error(
                f"models.{name}.path is 'toy' but the config has no toy_model / synthetic section"
            )
    for name, suite in EVAL["suites"].items():
        for task in suite["tasks"]:
            if task.startswith("toy_") and task[4:] not in config.get(
                "synthetic", {}
            ).get("tasks", {}):
                config_error(
                    f"evaluation.suites.{name} has {task!r} but synthetic.tasks has no {task[4:]!r}"
                )


check_config()


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    control=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    method="|".join(["mathneuro", "wanda", "random", "lape"]),
    n=r"\d+",
    seed=r"\d+",
    k=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    edit=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    suite=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    task=r"[a-z]+",


# Paths ------------------------------------------------------------------------------------------

R = "results"


def stats_path(model, dataset, n, seed):
    return f"{R}/{model}/stats/{dataset}/n{n}/seed{seed}.safetensors"


def topk_path(model, dataset, n, seed, k):
    return f"{R}/{model}/topk/{dataset}/n{n}/seed{seed}/k{k}.safetensors"


def mask_path(model, method, control, n, seed, k):
    """Where a method's mask lives. Wanda's is the skill's top-K set itself, no copy."""
    if method == "wanda":
        return topk_path(model, SKILL, n, seed, k)
    return f"{R}/{model}/masks/{method}/{control}/n{n}/seed{seed}/k{k}.safetensors"


def draw_stats_path(model, dataset, seed, n):
    return f"{R}/{model}/draws/stats/{dataset}/seed{seed}/n{n}.safetensors"


def draw_mask_path(model, control, seed, n):
    """MathNeuro mask of the first n texts of consistency draw `seed`, at consistency.k."""
    k = CONSISTENCY["k"]
    return (
        f"{R}/{model}/draws/masks/mathneuro/{control}/seed{seed}/n{n}/k{k}.safetensors"
    )


def eval_path(model, method, control, n, seed, k, edit, suite):
    return f"{R}/{model}/eval/{method}/{control}/n{n}/seed{seed}/k{k}/{edit}/{suite}.parquet"


def base_eval_path(model, suite):
    return f"{R}/{model}/eval/base/{suite}.parquet"


def counts_path(model, group, control, n, seed):
    """Per-layer counts of the masks made by one job: group 'topk' (MathNeuro/Wanda/random) or 'lape'."""
    return f"{R}/{model}/counts/{group}/{control}/n{n}/seed{seed}.parquet"


def log_path(rule, stem):
    return f"logs/{rule}/{stem}.log"


def bench_path(rule, stem):
    return f"{R}/benchmarks/{rule}/{stem}.tsv"


# Model parameters and resources ----------------------------------------------------------------


def model_config(model):
    if model not in config["models"]:
        raise WorkflowError(f"no model {model!r} in config.models")
    return config["models"][model]


def model_dir(model):
    """Local folder of the toy model (a workflow output), else None."""
    return f"{R}/models/{model}" if model_config(model)["path"] == "toy" else None


def model_input(wildcards):
    folder = model_dir(wildcards.model)
    return [folder] if folder else []


def model_params(wildcards):
    """Everything a job needs to load the model: plain values only."""
    cfg = model_config(wildcards.model)
    gpus = cfg.get("gpus", 1)
    return {
        "path": model_dir(wildcards.model) or cfg["path"],
        "revision": cfg.get("revision"),
        "dtype": cfg.get("dtype", "bfloat16"),
        "device": cfg.get("device", "auto"),
        "device_map": "auto" if gpus > 1 else None,
        "offline": bool(config.get("offline", False)),
    }


def size_b(model):
    return float(model_config(model).get("size_b", 1.0))


def gpus(wildcards):
    return int(model_config(wildcards.model).get("gpus", 1))


def model_threads(wildcards):
    return int(model_config(wildcards.model).get("threads", 1))


def gpu_mem_mb(wildcards):
    """Host memory for a job holding the model: weights (2 bytes per parameter) plus headroom."""
    return int(4000 + 3000 * size_b(wildcards.model))


def cpu_mem_mb(wildcards):
    """Top-K over float32 scores one matrix at a time, plus the model's weights on the host."""
    return int(4000 + 4000 * size_b(wildcards.model))


def runtime_min(per_billion, floor=10):
    return lambda wildcards: int(
        max(floor, math.ceil(per_billion * size_b(wildcards.model)))
    )


# Data --------------------------------------------------------------------------------------------


def dataset_spec(dataset, n, seed):
    return canonical({**config["datasets"][dataset], "n": int(n), "seed": int(seed)})


def dataset_input(wildcards):
    """A data set file made by the workflow (synthetic tasks) is an input; outside files are not."""
    path = config["datasets"][wildcards.dataset].get("path", "")
    return [path] if str(path).startswith(f"{R}/") else []


def synthetic_tasks():
    return sorted(config.get("synthetic", {}).get("tasks", {}))


def suite(wildcards):
    return canonical(EVAL["suites"][wildcards.suite])


def suite_task_files(wildcards):
    """Task YAMLs the workflow writes for the synthetic tasks a suite uses."""
    tasks = EVAL["suites"][wildcards.suite]["tasks"]
    return [f"{R}/tasks/{t}.yaml" for t in tasks if t.startswith("toy_")]


# Variants: which masks, edits and evaluations the analyses need ----------------------------------


def controls_for(method):
    return ["none"] if method == "wanda" else CONTROLS


def k_labels(method, labels):
    return [LAPE_K] if method == "lape" else labels


def variants(analysis):
    """(method, control, n, seed, k, edit) of every evaluated variant of 'pruning' or 'scaling'."""
    section = config[analysis]
    edits = [section["edit"]] if analysis == "pruning" else section["edits"]
    return [
        (method, control, N_MAIN, seed, k, edit)
        for method in section["methods"]
        for control in controls_for(method)
        for seed in SEEDS
        for k in k_labels(method, section["k"])
        for edit in edits
    ]


def evaluation_files(model):
    suites = list(EVAL["suites"])
    files = [base_eval_path(model, s) for s in suites]
    for variant in dict.fromkeys(variants("pruning") + variants("scaling")):
        files += [eval_path(model, *variant, s) for s in suites]
    return files


def consistency_mask(model, control, n, seed):
    """One identification of the consistency analysis: the main one at n = identification.n_samples
    (already made), else the first n texts of draw `seed`."""
    if int(n) == N_MAIN:
        return mask_path(model, "mathneuro", control, n, seed, CONSISTENCY["k"])
    return draw_mask_path(model, control, seed, n)


def counts_files(model):
    files = [counts_path(model, "topk", c, N_MAIN, s) for c in CONTROLS for s in SEEDS]
    if "lape" in config["methods"]:
        files += [
            counts_path(model, "lape", c, N_MAIN, s) for c in CONTROLS for s in SEEDS
        ]
    return files


def consistency_files(model):
    return [
        f"{R}/{model}/consistency/{c}/n{n}.parquet"
        for c in CONTROLS
        for n in CONSISTENCY["n_samples"]
    ]


TABLES = ["pruning", "scaling", "consistency", "layers", "share"]


def final_outputs():
    tables = [f"{R}/tables/{t}.parquet" for t in TABLES] + [
        f"{R}/tables/{t}_summary.parquet" for t in TABLES
    ]
    return tables + [f"{R}/tables/plots/{t}.png" for t in TABLES]
