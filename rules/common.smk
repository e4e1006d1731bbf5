"""Config composition and validation, wildcard constraints, paths, and the input functions and
params the stages share."""

import glob
import math
import re
from importlib.metadata import version
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from mathneuro.analyses import FIGURES, REPORT_CATEGORIES, TABLES
from mathneuro.configs import (
    FILE_SOURCES,
    bpb_datasets,
    bpb_problems,
    check_data,
    compose,
    gguf_problems,
    lm_eval_task_names,
    unknown_tasks,
)
from mathneuro.data import config_names, local_entry, split_names, validate_spec
from mathneuro.evaluate import TASK_PREFIX, is_generated_task
from mathneuro.methods import METHODS, NO_CONTROL, control_sets
from mathneuro.methods import controls as method_controls

# Config ------------------------------------------------------------------------------------------


def config_error(message):
    raise WorkflowError(f"config: {message}")


try:
    _composed = compose(
        workflow.overwrite_configfiles or workflow.configfiles,
        workflow.config_settings.config,
    )
except ValueError as err:
    config_error(str(err))
config.clear()
config.update(_composed)
validate(config, "../schemas/config.schema.yaml")  # fills in the schema's defaults

STUDY = config["study"]
ID = config["identification"]
EVAL = config["evaluation"]
SKILL = ID["skill"]
CONTROLS = ID["controls"]
DATASETS = [SKILL, *CONTROLS]
N_MAIN = ID["n_samples"]
SEEDS = ID["seeds"]
CONSISTENCY = config["consistency"]
DATA_EFFICIENCY = config["data_efficiency"]
DATA_EFFICIENCY_K = DATA_EFFICIENCY["k"] or [CONSISTENCY["k"]]
DATA_EFFICIENCY_METHODS = DATA_EFFICIENCY["methods"] or config["pruning"]["methods"]
SKILL_TASKS = EVAL["skill_tasks"] or [
    t for suite in EVAL["suites"].values() for t in suite["tasks"] if SKILL in t
]
K = dict(
    sorted(ID["k"].items(), key=lambda item: item[1])
)  # label -> fraction, smallest first
EDITS = config["edits"]  # label -> weight factor
TOP_K_METHOD = next(m.name for m in METHODS.values() if m.top_k_set)
LM_EVAL_VERSION = version("lm-eval")  # task definitions change with it


def canonical(value):
    """Dicts with sorted keys, recursively: reordering the config must not rerun jobs."""
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


def is_toy_task(task):
    return task.startswith(TASK_PREFIX)


def toy_name(task):
    """The synthetic task a toy task evaluates: toy_math -> math."""
    return task[len(TASK_PREFIX) :]


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
        ("consistency.k", [CONSISTENCY["k"]]),
        ("data_efficiency.k", DATA_EFFICIENCY_K),
    ]:
        for label in labels:
            if label not in K:
                config_error(
                    f"{key} names K {label!r}, not among identification.k: {sorted(K)}"
                )
    for key, labels in [
        ("pruning.edit", [config["pruning"]["edit"]]),
        ("scaling.edits", config["scaling"]["edits"]),
        ("data_efficiency.edits", DATA_EFFICIENCY["edits"]),
    ]:
        for label in labels:
            if label not in EDITS:
                config_error(
                    f"{key} names edit {label!r}, not among edits: {sorted(EDITS)}"
                )
    for key, names in [
        ("methods", config["methods"]),
        ("pruning.methods", config["pruning"]["methods"]),
        ("scaling.methods", config["scaling"]["methods"]),
        ("data_efficiency.methods", DATA_EFFICIENCY_METHODS),
    ]:
        for name in names:
            if name not in METHODS:
                config_error(f"{key} has {name!r}; methods are {sorted(METHODS)}")
            if key != "methods" and name not in config["methods"]:
                config_error(
                    f"{key} has {name!r}, which is not in methods: {config['methods']}"
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
        if model["path"] == "toy" and "synthetic" not in config:
            config_error(
                f"models.{name}.path is 'toy' but the config has no synthetic section"
            )
        if (model["path"] == "random") != ("architecture" in model):
            config_error(
                f"models.{name}: `architecture` goes with path 'random', and only with it"
            )
    for name, suite in EVAL["suites"].items():
        for task in suite["tasks"]:
            if is_toy_task(task) and toy_name(task) not in config.get(
                "synthetic", {}
            ).get("tasks", {}):
                config_error(
                    f"evaluation.suites.{name} has {task!r} but synthetic.tasks has no {toy_name(task)!r}"
                )


check_config()


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    skill=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    control=r"[A-Za-z0-9][A-Za-z0-9_.+-]*",  # + joins the controls of an "all" set
    method="|".join(METHODS),
    n=r"\d+",
    seed=r"\d+",
    k=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    edit=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    suite=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    task=r"[a-z_]+",


# Paths: one function per kind of output, used by the rules that write and read it -----------------

R = "results"


def stats_path(model, dataset, n, seed):
    return f"{R}/{model}/stats/{dataset}/n{n}/seed{seed}.safetensors"


def topk_path(model, dataset, n, seed, k):
    return f"{R}/{model}/topk/{dataset}/n{n}/seed{seed}/k{k}.safetensors"


def topk_counts_path(model, dataset, n, seed, k):
    return f"{R}/{model}/topk/{dataset}/n{n}/seed{seed}/k{k}.counts.parquet"


# The skill is in every path below: studies of different skills on one model share the statistics
# and TopK sets of their data sets, and never overwrite each other's sets or evaluations.


def mask_path(model, skill, method, control, n, seed, k):
    """Where a method's set lives. A TopK-set method (Wanda) reads the skill's TopK set itself."""
    if METHODS[method].top_k_set:
        return topk_path(model, skill, n, seed, k)
    return (
        f"{R}/{model}/masks/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}.safetensors"
    )


def counts_path(model, skill, method, control, n, seed, k):
    """Selected entries per matrix of one set (for the layer and share tables)."""
    if METHODS[method].top_k_set:
        return topk_counts_path(model, skill, n, seed, k)
    return f"{R}/{model}/counts/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}.parquet"


def top_k_labels(wildcards):
    """A TopK set's counts are labelled by its data set alone (method "topk", control = the data
    set), as every study reads them; aggregate names the skill's set after the TopK-set method.
    """
    return {
        "model": wildcards.model,
        "method": "topk",
        "control": wildcards.dataset,
        "n_samples": int(wildcards.n),
        "seed": int(wildcards.seed),
        "k": wildcards.k,
        "k_fraction": K[wildcards.k],
    }


def set_labels(wildcards, method=None):
    """How a set's counts are labelled (its method, when the job writes one method's set)."""
    return {
        "model": wildcards.model,
        **({"method": method} if method else {}),
        "control": wildcards.control,
        "n_samples": int(wildcards.n),
        "seed": int(wildcards.seed),
        "k": wildcards.k,
        "k_fraction": K[wildcards.k],
    }


def eval_path(model, skill, method, control, n, seed, k, edit, suite, kind="table"):
    """One evaluation's files: `table` (tidy results), `results` (lm-eval's JSON), `samples`."""
    return f"{R}/{model}/eval/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}/{edit}/{suite}{EVAL_SUFFIXES[kind]}"


def base_eval_path(model, suite, kind="table"):
    return f"{R}/{model}/eval/base/{suite}{EVAL_SUFFIXES[kind]}"


EVAL_SUFFIXES = {
    "table": ".parquet",
    "results": ".results.json",
    "samples": ".samples.parquet",
}


def consistency_path(model, skill, control, n):
    return f"{R}/{model}/consistency/{skill}/{control}/n{n}.parquet"


def topk_consistency_path(model, dataset, n):
    return f"{R}/{model}/topk_consistency/{dataset}/n{n}.parquet"


def suite_dir(suite):
    return f"{R}/tasks/{suite}"


def table_path(name, summary=False):
    return f"{R}/tables/{STUDY}/{name}{'_summary' if summary else ''}.parquet"


def plot_path(name, kind="png"):
    """A table's figure (png), or its summary as an HTML table (html), for the report."""
    return f"{R}/tables/{STUDY}/plots/{name}.{kind}"


# Models: what a job needs to load one, and what it asks of the cluster -----------------------------


def model_config(model):
    if model not in config["models"]:
        raise WorkflowError(f"no model {model!r} in config.models")
    return config["models"][model]


def model_dir(model):
    """Local folder of a model the workflow builds (toy, random, dequantized GGUF), else None."""
    cfg = model_config(model)
    built = cfg["path"] in ("toy", "random") or cfg.get("gguf")
    return f"{R}/models/{model}" if built else None


def gguf_file(wildcards):
    """A GGUF model's file when `path` is a local folder (a hub file is fetched by its job)."""
    from mathneuro.gguf import local_file

    cfg = model_config(wildcards.model)
    file = local_file(cfg["path"], cfg["gguf"])
    return [str(file)] if file else []


def models_built_as(kind):
    """Wildcard constraint: the labels of the models whose path is `kind` (toy, random), or that
    name a GGUF file (kind "gguf")."""
    labels = [
        m
        for m, c in config["models"].items()
        if (bool(c.get("gguf")) if kind == "gguf" else c["path"] == kind)
    ]
    return "|".join(map(re.escape, labels)) or "(?!)"


def model_input(wildcards):
    folder = model_dir(wildcards.model)
    return [folder] if folder else []


def model_params(wildcards):
    """Everything a job needs to load the model: plain values only."""
    cfg = model_config(wildcards.model)
    return {
        "path": model_dir(wildcards.model) or cfg["path"],
        "revision": cfg["revision"],
        "dtype": cfg["dtype"],
        "device": cfg["device"],
        "device_map": "auto" if cfg["gpus"] > 1 else None,
        "gpus": cfg["gpus"],
        "offline": config["offline"],
    }


def gpus(wildcards):
    return model_config(wildcards.model)["gpus"]


def model_threads(wildcards):
    return model_config(wildcards.model)["threads"]


def size_b(model):
    return float(model_config(model)["size_b"])


# Memory and time grow with the attempt: a job killed for either is retried with twice, then
# three times as much (profiles/slurm: retries).


def model_job_mem_mb(wildcards, attempt):
    """Host memory of a job that holds the model: its weights (2 bytes per parameter) plus headroom."""
    return int((4000 + 3000 * size_b(wildcards.model)) * attempt)


def weights_job_mem_mb(wildcards, attempt):
    """Host memory of a job that reads the weights on the CPU and scores one matrix at a time."""
    return int((4000 + 4000 * size_b(wildcards.model)) * attempt)


def runtime_min(per_billion, floor=10):
    """Minutes: `per_billion` per billion parameters, at least `floor`, times the attempt."""
    return lambda wildcards, attempt: int(
        max(floor, math.ceil(per_billion * size_b(wildcards.model))) * attempt
    )


def target_params():
    """Which matrices are scored (every job that scores, collects or masks reads the same)."""
    return {
        "include": ID["include"],
        "exclude": ID["exclude"],
        "untied_lm_head": ID["untied_lm_head"],
    }


# Data --------------------------------------------------------------------------------------------


def mmlu_release_dir(hub_id):
    """Where the workflow writes an MMLU release converted to hub records."""
    return f"{R}/data/local/{hub_id}"


RELEASES = {
    hub_id: entry["mmlu_release"]
    for hub_id, entry in config["local_data"].items()
    if "mmlu_release" in entry
}


def local_data():
    """config.local_data with each MMLU release replaced by the files it is converted to."""
    table = {}
    for hub_id, entry in config["local_data"].items():
        if hub_id in RELEASES:
            files = {
                split: f"{mmlu_release_dir(hub_id)}/{split}/{{name}}.jsonl"
                for split in ("dev", "validation", "test")
            }
            entry = {"aliases": entry["aliases"], "files": files}
        table[hub_id] = canonical(entry)
    return table


LOCAL_DATA = local_data()


def existing_or_globbed(pattern):
    """A file name as it is (a missing one is reported by Snakemake), or a glob's matches."""
    return sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]


def local_inputs(hub_id, names, splits):
    """What a local copy of `hub_id` reads for `splits` of configs `names` ("*": every config)."""
    if hub_id in RELEASES:
        return [mmlu_release_dir(hub_id)]
    files = []
    for name in names:
        for split in splits:
            patterns = LOCAL_DATA[hub_id]["files"].get(split, [])
            for pattern in [patterns] if isinstance(patterns, str) else patterns:
                files += existing_or_globbed(pattern.replace("{name}", name or ""))
    return files


def local_key(hub_id):
    """The local_data key that serves hub id `hub_id` (by key or alias), or None."""
    entry = local_entry(LOCAL_DATA, hub_id)
    return next((key for key, e in LOCAL_DATA.items() if e is entry), None)


def dataset_spec(dataset, n, seed):
    return canonical({**config["datasets"][dataset], "n": int(n), "seed": int(seed)})


def dataset_input(wildcards):
    return dataset_files(wildcards.dataset)


def dataset_files(dataset):
    """Every file reading data set `dataset` reads: its own files, or those of its local copy."""
    return spec_files(config["datasets"][dataset])


def spec_files(spec):
    """Every file reading data spec `spec` reads: its own files, or those of its local copy."""
    if spec["source"] in FILE_SOURCES:
        return existing_or_globbed(spec["path"])
    key = local_key(spec["path"]) if spec["source"] == "hf" else None
    if key is None:
        return []
    return local_inputs(
        key, config_names(spec), split_names(spec.get("split") or "train")
    )


def dataset_local_data(wildcards):
    """The local_data entry a data set is read from (param: changing it reruns the collection)."""
    spec = config["datasets"][wildcards.dataset]
    key = local_key(spec["path"]) if spec["source"] == "hf" else None
    return {key: LOCAL_DATA[key]} if key else {}


def synthetic_tasks(trained=False):
    """The synthetic tasks (``trained``: those with train texts, which the toy model learns)."""
    tasks = config.get("synthetic", {}).get("tasks", {})
    return sorted(
        t for t, sizes in tasks.items() if sizes["n_train"] > 0 or not trained
    )


def synthetic_files():
    """The data files that synthetic_data writes, each with a record like its first (None: the
    split has no records), standing in for the file until it is written."""
    from mathneuro.synthetic import generate

    made = {}
    section = config.get("synthetic", {})
    for task, sizes in section.get("tasks", {}).items():
        splits = generate(
            task,
            n_train=min(sizes["n_train"], 1),
            n_test=min(sizes["n_test"], 1),
            seed=section["seed"],
        )
        for split, records in splits.items():
            made[f"{R}/data/synthetic/{task}/{split}.jsonl"] = (
                records[0] if records else None
            )
    return made


def check_inputs():
    """What the config names outside itself, before any job and whatever is already computed
    (mathneuro.configs): the data files and their template fields, and the suites' tasks.
    """
    # unused specs read nothing
    used = {name: config["datasets"][name] for name in DATASETS}
    problems = check_data(used, config["local_data"], synthetic_files())
    problems += gguf_problems(config["models"])
    problems += bpb_problems(EVAL["suites"], config["datasets"], EVAL["heldout_split"])
    lm_eval_tasks = [
        t
        for s in EVAL["suites"].values()
        for t in s["tasks"]
        if not is_generated_task(t)
    ]
    if lm_eval_tasks:
        known = lm_eval_task_names(EVAL["include_path"])
        problems += unknown_tasks(
            EVAL["suites"], lambda t: is_generated_task(t) or t in known
        )
    if problems:
        config_error("\n  ".join(problems))


check_inputs()


# Evaluation --------------------------------------------------------------------------------------


def bpb_inputs(wildcards):
    """The held-out files a suite's bpb_<data set> tasks read: a file spec's own, or the local
    copy of a hub data set's held-out split."""
    from mathneuro.evaluate import heldout_spec

    return [
        f
        for dataset in bpb_datasets(EVAL["suites"][wildcards.suite]["tasks"])
        for f in spec_files(
            heldout_spec(config["datasets"][dataset], EVAL["heldout_split"])
        )
    ]


def bpb_params(wildcards):
    """What the suite's bpb tasks are made from: their data sets' specs and the held-out split."""
    datasets = bpb_datasets(EVAL["suites"][wildcards.suite]["tasks"])
    if not datasets:
        return {}
    return {
        "specs": {d: canonical(config["datasets"][d]) for d in datasets},
        "split": EVAL["heldout_split"],
        "local_data": LOCAL_DATA,
    }


def suite(wildcards):
    return canonical(EVAL["suites"][wildcards.suite])


def suite_inputs(wildcards):
    """Files a suite's task folder is made from, by name: each toy task's test split, and the
    local data and user task files that lm-eval's tasks may read."""
    tasks = EVAL["suites"][wildcards.suite]["tasks"]
    inputs = {
        t: f"{R}/data/synthetic/{toy_name(t)}/test.jsonl"
        for t in tasks
        if is_toy_task(t)
    }
    if any(not is_toy_task(t) for t in tasks):
        inputs["local_data"] = [
            f
            for hub_id, entry in LOCAL_DATA.items()
            for f in local_inputs(hub_id, ["*"], sorted(entry["files"]))
        ]
        if EVAL["include_path"]:
            inputs["user_tasks"] = sorted(
                str(p) for p in Path(EVAL["include_path"]).rglob("*.yaml")
            )
    return inputs


def suite_lm_eval(wildcards):
    """What lm-eval's tasks in a suite depend on besides their names (nothing for toy suites)."""
    if all(is_toy_task(t) for t in EVAL["suites"][wildcards.suite]["tasks"]):
        return {}
    return {
        "include_path": EVAL["include_path"],
        "local_data": LOCAL_DATA,
        "version": LM_EVAL_VERSION,
    }


def analysis_axes(analysis):
    """What an edit analysis ('pruning', 'scaling', 'data_efficiency') evaluates, as the values
    of each column of the evaluations: aggregate selects the analysis's rows with it, and its
    variants are these values crossed, with every control of each method."""
    section = config[analysis]
    if analysis == "data_efficiency":
        return {
            "method": DATA_EFFICIENCY_METHODS,
            "n_samples": CONSISTENCY["n_samples"],
            "seed": CONSISTENCY["seeds"],
            "k": DATA_EFFICIENCY_K,
            "edit": section["edits"],
        }
    return {
        "method": section["methods"],
        "n_samples": [N_MAIN],
        "seed": SEEDS,
        "k": section["k"],
        "edit": [section["edit"]] if analysis == "pruning" else section["edits"],
    }


def variants(analysis):
    """(method, control, n, seed, k, edit) of every evaluated variant of an analysis."""
    axes = analysis_axes(analysis)
    return [
        (method, control, n, seed, k, edit)
        for method in axes["method"]
        for control in method_controls(method, CONTROLS)
        for n in axes["n_samples"]
        for seed in axes["seed"]
        for k in axes["k"]
        for edit in axes["edit"]
    ]


EDIT_ANALYSES = ("pruning", "scaling", "data_efficiency")


def evaluation_files(model, kind="table"):
    suites = list(EVAL["suites"])
    files = [base_eval_path(model, s, kind) for s in suites]
    for variant in dict.fromkeys(v for a in EDIT_ANALYSES for v in variants(a)):
        files += [eval_path(model, SKILL, *variant, s, kind) for s in suites]
    return files


# Sets for the layer and share tables, and the consistency analysis --------------------------------


def study_k():
    """The K labels some analysis uses, smallest first."""
    used = (
        set(config["pruning"]["k"]) | set(config["scaling"]["k"]) | {CONSISTENCY["k"]}
    )
    return [k for k in K if k in used]


def counts_files(model):
    return [
        counts_path(model, SKILL, method, control, N_MAIN, seed, k)
        for method in config["methods"]
        for control in method_controls(method, CONTROLS)
        for seed in SEEDS
        for k in study_k()
    ]


def consistency_files(model):
    """The overlaps of independent draws: of the skill-specific sets against each control, and of
    every data set's own TopK set."""
    return [
        consistency_path(model, SKILL, c, n)
        for c in CONTROLS
        for n in CONSISTENCY["n_samples"]
    ] + [
        topk_consistency_path(model, d, n)
        for d in DATASETS
        for n in CONSISTENCY["n_samples"]
    ]


def final_outputs():
    return (
        [table_path(t) for t in TABLES]
        + [table_path(t, summary=True) for t in TABLES]
        + [table_path("samples")]
        + [plot_path(f) for f in FIGURES]
        + [plot_path(t, "html") for t in TABLES]
    )
