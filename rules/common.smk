"""The workflow's config, validated; wildcard constraints, paths, and the input functions and
params the stages share. What follows from the config (its checks, the analyses' variants, which
files a data set reads, what a job loads) is mathneuro.study's."""

import re
import sys
from importlib.metadata import version
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

from mathneuro import freshness
from mathneuro.analyses import (
    FIGURES,
    NO_SET,
    PLANTED,
    PLANTED_RANDOM,
    REPORT_CATEGORIES,
    TABLES,
)
from mathneuro.configs import compose
from mathneuro.methods import METHODS, SPECIFIC, TOP_K, made_methods, sources
from mathneuro.methods import controls as method_controls
from mathneuro.hub import go_offline
from mathneuro.study import Study, canonical
from mathneuro.study.located import located

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
RESULTS = "results"
study = Study(config, RESULTS)
# Before any job, and whatever is already computed (Snakemake would fall back on finished outputs
# where a job cannot be built): cross-references, then what the config names outside itself (data
# files and every record's fields, models, GGUF files, task folders, tasks) and, offline, whether the
# hub cache holds what the jobs read; not for `snakemake prefetch`, which is how it gets there.
_prefetching = "prefetch" in sys.argv[1:]
# Where jobs run, not what they compute: the offline flags every job inherits, not a param.
if config["offline"] and not _prefetching:
    go_offline()
for _check in (
    study.problems,
    lambda: study.input_problems(hub_cache=not _prefetching),
):
    if _problems := _check():
        config_error("\n  ".join(_problems))
# What the study reads from the machine, named by its content (mathneuro.study.located): a copy
# at another path reruns nothing, a changed byte its readers.
config.update(located(config, RESULTS, workflow.basedir))
study = Study(config, RESULTS)
LM_EVAL_VERSION = version("lm-eval")  # task definitions change with it

# Reruns by content, never by clock (mathneuro.freshness): times that a copy or a touch moved
# away from the jobs that wrote the files are set back first, by the Snakemake that plans the
# run only. A cluster job parses the workflow again while other jobs write their outputs: there,
# an output written but not yet recorded would get its old record's time (measured on Slurm: each
# job's parse set back the time stamps of the output folders it reads, which Snakemake had
# touched; tests/test_slurm.py).
if workflow.is_main_process and (_settled := freshness.settle_times()):
    logger.info(
        f"{len(_settled)} finished outputs were newer than the jobs that wrote them (a copy or a "
        "touch): their times are set back to those jobs' ends"
    )


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    skill=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    control=r"[A-Za-z0-9][A-Za-z0-9_.+-]*",  # + joins the controls of an "all" set
    method="|".join([*METHODS, PLANTED, PLANTED_RANDOM]),
    n=r"\d+",
    seed=r"\d+",
    k=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    edit=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    suite=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    task=r"[a-z_]+",


# Paths: one function per kind of output, used by the rules that write and read it -----------------


def stats_path(model, dataset, n, seed):
    return f"{RESULTS}/{model}/stats/{dataset}/n{n}/seed{seed}.safetensors"


def topk_path(model, dataset, n, seed, k, suffix=".safetensors"):
    """A data set's TopK set (suffix ".counts.parquet": its selected entries per matrix)."""
    return f"{RESULTS}/{model}/topk/{dataset}/n{n}/seed{seed}/k{k}{suffix}"


def snip_path(model, dataset, n, seed):
    """SNIP's importance scores of a draw (mathneuro.snip): one full matrix per target."""
    return f"{RESULTS}/{model}/snip/{dataset}/n{n}/seed{seed}.safetensors"


def snip_topk_path(model, dataset, n, seed, k, suffix=".safetensors"):
    """A data set's TopK set by SNIP's scores."""
    return f"{RESULTS}/{model}/snip_topk/{dataset}/n{n}/seed{seed}/k{k}{suffix}"


TOPK_PATHS = {
    "activations": topk_path,
    "gradients": snip_topk_path,
}  # by importance (mathneuro.methods)


# The skill is in every path below: studies of different skills on one model share the statistics
# and TopK sets of their data sets, and never overwrite each other's sets or evaluations.


SET_FILES = {"masks": ".safetensors", "counts": ".parquet"}
TOPK_FILES = {"masks": ".safetensors", "counts": ".counts.parquet"}


def mask_path(model, skill, method, control, n, seed, k, kind="masks"):
    """Where a method's set lives (kind "counts": its selected entries per matrix). A TopK-set
    method (Wanda) reads the skill's TopK set itself; a planted model's own sets are its planted
    set S and random sets of S's count."""
    if method == PLANTED:
        return truth_path(model)
    if method == PLANTED_RANDOM:
        return planted_random_path(model, seed)
    if method in METHODS and METHODS[method].top_k_set:
        return topk_path(model, skill, n, seed, k, TOPK_FILES[kind])
    folder = f"{RESULTS}/{model}/{kind}/{skill}/{method}/{control}/n{n}/seed{seed}"
    return f"{folder}/k{k}{SET_FILES[kind]}"


EVAL_SUFFIXES = dict(
    table=".parquet", results=".results.json", samples=".samples.parquet"
)


def eval_path(model, skill, method, control, n, seed, k, edit, suite, kind="table"):
    """One evaluation's files: `table` (tidy results), `results` (lm-eval's JSON), `samples`."""
    variant = f"{skill}/{method}/{control}/n{n}/seed{seed}/k{k}/{edit}"
    return f"{RESULTS}/{model}/eval/{variant}/{suite}{EVAL_SUFFIXES[kind]}"


def truth_path(model):
    """A planted model's set S, where its skill was planted (mathneuro.plant)."""
    return f"{RESULTS}/{model}/planted/truth.safetensors"


def planted_random_path(model, seed):
    """A random set of the planted set's count in every matrix (mathneuro.masks.random_like)."""
    return f"{RESULTS}/{model}/planted/random/seed{seed}.safetensors"


def localization_path(model):
    """How every set the study finds on a planted model recovers its S (mathneuro.plant)."""
    return f"{RESULTS}/{model}/planted/localization.parquet"


def trained_path(model, skill, method, control, n, seed, k, edit):
    """What a fine-tuning edit that depends on a set trained (mathneuro.finetune): one per set."""
    variant = f"{skill}/{method}/{control}/n{n}/seed{seed}/k{k}"
    return f"{RESULTS}/{model}/finetuned/{variant}/{edit}.safetensors"


def unedited_trained_path(model, skill, seed, edit):
    """What a fine-tuning run that needs no set trained (every parameter, from the unedited
    model): one per repeat."""
    return f"{RESULTS}/{model}/finetuned/{skill}/all/seed{seed}/{edit}.safetensors"


def unedited_run_eval_path(model, skill, seed, edit, suite, kind="table"):
    """One evaluation of a fine-tuning run that needs no set (every parameter trained from the
    unedited model): one per repeat, beside its run's path."""
    return f"{RESULTS}/{model}/eval/{skill}/all/seed{seed}/{edit}/{suite}{EVAL_SUFFIXES[kind]}"


def base_eval_path(model, suite, kind="table"):
    return f"{RESULTS}/{model}/eval/base/{suite}{EVAL_SUFFIXES[kind]}"


# The consistency analysis' sets at K label CONSISTENCY_K (composite where the controls' K
# differs, which its files then name, so they never overwrite those of the controls' own K).
CONSISTENCY_K = study.k.of_set(SPECIFIC, study.consistency["k"])


def consistency_path(model, skill, control, n):
    k = "" if CONSISTENCY_K == study.consistency["k"] else f"k{CONSISTENCY_K}/"
    return f"{RESULTS}/{model}/consistency/{skill}/{control}/{k}n{n}.parquet"


def topk_consistency_path(model, dataset, n):
    return f"{RESULTS}/{model}/topk_consistency/{dataset}/n{n}.parquet"


def subskill_overlap_path(model, method, n, seed, k):
    """The overlaps of the sub-skills' sets with one another (their labels name the file)."""
    skills = "+".join(sorted(study.subskills.skills))
    return f"{RESULTS}/{model}/subskill_overlap/{skills}/{method}/n{n}/seed{seed}/k{k}.parquet"


def agreement_path(model, skill, method_a, method_b, control, n, seed, k):
    """How far two methods' sets from one draw agree (mathneuro.study.Analyses.agreements)."""
    return f"{RESULTS}/{model}/agreement/{skill}/{method_a}+{method_b}/{control}/n{n}/seed{seed}/k{k}.parquet"


def layer_overlap_path(consistency_file):
    """The per-layer overlaps written beside a consistency job's whole-model ones."""
    return consistency_file.removesuffix(".parquet") + ".layers.parquet"


def suite_dir(suite):
    return f"{RESULTS}/tasks/{suite}"


def table_path(name, summary=False):
    return (
        f"{RESULTS}/tables/{study.name}/{name}{'_summary' if summary else ''}.parquet"
    )


def plot_path(name, kind="png"):
    """A table's figure (png), or its summary as an HTML table (html), for the report."""
    return f"{RESULTS}/tables/{study.name}/plots/{name}.{kind}"


# Input functions and params ----------------------------------------------------------------------


def per(wildcard, function):
    """An input or params function: ``function`` of the job's ``wildcard``."""
    return lambda wildcards: function(getattr(wildcards, wildcard))


def flat(paths):
    """The paths of an input function's value: a list, or a dict of lists."""
    return (
        [p for part in paths.values() for p in part]
        if isinstance(paths, dict)
        else list(paths)
    )


def by_content(function):
    """An input function: ``function``'s paths, those outside results/ marked ancient (their times
    never rerun a job; the job's ``content`` param holds their digests), the workflow's own as
    they are (a dict of lists stays one)."""

    def inputs(wildcards):
        paths = function(wildcards)
        outside = set(study.external(flat(paths))) | {
            p for p in flat(paths) if freshness.linked(p, RESULTS)
        }
        mark = lambda part: [ancient(p) if p in outside else p for p in part]
        if isinstance(paths, dict):
            return {name: mark(part) for name, part in paths.items()}
        return mark(paths)

    return inputs


def content(*functions):
    """A ``content`` param: the digests of the files outside results/ that ``functions`` name
    (the workflow's own by their path in it), and of those below a link of fixed name (a user's
    task folder); a link named by content needs none."""
    return lambda wc: freshness.digests(
        (
            p
            for f in functions
            for p in flat(f(wc))
            if study.external([p]) or freshness.named_link(p, RESULTS)
        ),
        root=workflow.basedir,
    )


def code(script):
    """A ``code`` param: the digest of a rule's script, which reruns its jobs when it changes
    (profiles/default leaves out Snakemake's code trigger: it goes by the script's time).
    """
    return freshness.script_digest(Path(workflow.basedir) / "workflow_scripts" / script)


def model_paths(wildcards):
    """The folder a job loads its model from: the workflow's (toy, random, GGUF), or a local
    one; nothing for a hub model."""
    label = wildcards.model
    folder = study.models.folder(label) or study.models.local_folder(label)
    return [folder] if folder else []


model_input = by_content(model_paths)


def models_built_as(kind):
    """Wildcard constraint: the models built as `kind` (toy, random, gguf)."""
    return "|".join(map(re.escape, study.models.built_as(kind))) or "(?!)"


def toy_models(shipped):
    """Wildcard constraint: the toy models copied from the shipped toy (`shipped`), or trained."""
    return "|".join(map(re.escape, study.models.toys(shipped=shipped))) or "(?!)"


def toy_train_files(wildcards):
    """The synthetic train files a toy model learns from."""
    return [
        f"{RESULTS}/data/synthetic/{t}/train.jsonl"
        for t in study.data.synthetic_tasks(trained=True)
    ]


def shipped_toy_folder(wildcards):
    """The shipped toy, by content: a checkout at another path reads the same name."""
    return [freshness.link(study.models.shipped_toy, RESULTS)]


def plant_bases():
    """Wildcard constraint: the base toys of the planted models (Study.plant_base)."""
    return "|".join(map(re.escape, study.plant_bases())) or "(?!)"


plant_data_paths = per(
    "model",
    lambda model: [f for d in study.planting_data(model) for f in study.data.files(d)],
)


model_params = per("model", study.models.params)
gpus = per("model", lambda model: study.models[model]["gpus"])
model_threads = per("model", lambda model: study.models[model]["threads"])


gguf_paths = per("model", study.models.gguf_files)
gguf_file = by_content(gguf_paths)


# Memory and time grow with the attempt (profiles/slurm: retries).


def mem_mb(per_billion):
    """Host memory: 4 GB plus `per_billion` MB per billion parameters, times the attempt."""
    return lambda wc, attempt: study.models.memory_mb(wc.model, attempt, per_billion)


def runtime_min(per_billion, floor=10):
    """Minutes: `per_billion` per billion parameters, at least `floor`, times the attempt."""
    return lambda wc, attempt: study.models.runtime_min(
        wc.model, attempt, per_billion, floor
    )


# the model's weights, 2 bytes per parameter, and headroom; or weights read on the CPU, scored
# one matrix at a time
model_job_mem_mb, weights_job_mem_mb = mem_mb(3000), mem_mb(4000)


dataset_paths = per("dataset", study.data.files)
dataset_input = by_content(dataset_paths)
dataset_local_data = per("dataset", study.data.local_data_of)
release_paths = per("hub", lambda hub: [study.data.releases[hub]])


def random_model_data(wildcards):
    return [f for d in study.datasets for f in study.data.files(d)]


bpb_paths = per("suite", study.suites.bpb_files)
bpb_inputs = by_content(bpb_paths)
bpb_params = per("suite", study.suites.bpb_params)
suite = per("suite", study.suites.spec)
suite_paths = per("suite", study.suites.inputs)
suite_inputs = by_content(suite_paths)
suite_lm_eval = per("suite", lambda s: study.suites.lm_eval(s, LM_EVAL_VERSION))
suite_definitions = per(
    "suite",
    lambda s: freshness.digests(study.suites.project_files(s), root=workflow.basedir),
)


def set_labels(wildcards):
    """How a set's counts are labelled (mathneuro.study.KLabels.set_labels): a TopK job's by its
    data set, a method's by method and control."""
    wc, top_k = wildcards, hasattr(wildcards, "dataset")
    method, control = (None, wc.dataset) if top_k else (wc.method, wc.control)
    return study.k.set_labels(wc.model, method, control, wc.n, wc.seed, wc.k)


def set_inputs(wildcards):
    """What one set is made from (mathneuro.methods.sources), as files: TopK sets (the controls'
    at the set's K label, a composite one where their K differs), statistics and the model, or
    the set a same-count baseline matches."""
    wc = wildcards
    top_k_label = lambda d: study.k.skill(wc.k) if d == wc.skill else wc.k
    draw = (wc.n, wc.seed)
    ranked = TOPK_PATHS[METHODS[wc.method].importance]
    path_of = {
        "top_k": lambda d: ranked(wc.model, d, *draw, top_k_label(d)),
        "statistics": lambda d: stats_path(wc.model, d, *draw),
        "set": lambda m: mask_path(wc.model, wc.skill, m, wc.control, *draw, wc.k),
    }
    needs = sources(wc.method, wc.skill, wc.control)
    inputs = {kind: [path_of[kind](x) for x in names] for kind, names in needs.items()}
    return inputs | ({"model": model_input(wc)} if "statistics" in needs else {})


def set_model_paths(wildcards):
    """The model folder a set's method reads (those that read statistics), else nothing."""
    needs = sources(wildcards.method, wildcards.skill, wildcards.control)
    return model_paths(wildcards) if "statistics" in needs else []


def edits_constraint(labels):
    """Wildcard constraint: one of ``labels`` (edit labels), or nothing at all."""
    return "|".join(map(re.escape, labels)) or "(?!)"


def finetune_data_paths(wildcards):
    """The files a fine-tuning run reads its texts from."""
    return study.data.files(config["finetune"][wildcards.edit]["data"])


finetune_data = by_content(finetune_data_paths)


def finetune_params(wildcards):
    """What a fine-tuning run reads besides its files: its settings, its texts' spec (the repeat's
    draw), the start edit's factor, and the targets' patterns (plain values)."""
    spec = study.finetune_spec(wildcards.edit)
    return {
        "settings": spec,
        "texts": study.training_texts(wildcards.edit, wildcards.seed),
        "local_data": study.data.local_data_of(spec["data"]),
        "start_factor": study.edits[spec["start"]] if spec["start"] else None,
    }


# What rule all and aggregate read ----------------------------------------------------------------


def base_evaluations():
    """(model, suite) of every evaluation of an unedited model."""
    return [[m, s] for m in config["models"] for s in study.suites]


def evaluation_files(model, kind="table"):
    """The unedited model's evaluations, then every edited variant's, on their suites."""
    files = [base_eval_path(model, s, kind) for s in study.suites]
    for variant in study.analyses.evaluated_variants():
        for s in study.suites.evaluated:
            files.append(eval_path(model, study.skill, *variant, s, kind))
    for seed, edit in study.analyses.unedited_runs():
        files += [
            unedited_run_eval_path(model, study.skill, seed, edit, s, kind)
            for s in study.suites.evaluated
        ]
    for variant in study.subskills.variants():
        files += [eval_path(model, *variant, s, kind) for s in study.subskills.suites()]
    for variant in study.planted_variants(model):
        files += [
            eval_path(model, study.skill, *variant, s, kind)
            for s in study.suites.evaluated
        ]
    return list(dict.fromkeys(files))


def counts_files(model):
    """The counts of the study's sets (for the layer and share tables)."""
    n = study.n_samples
    return [
        mask_path(model, study.skill, method, control, n, seed, k, "counts")
        for method, control, seed, k in study.analyses.sets()
    ]


def consistency_files(model):
    """Overlaps of independent draws: the skill-specific sets', each data set's TopK set."""
    counts = study.consistency["n_samples"]
    return [
        consistency_path(model, study.skill, c, n)
        for c in method_controls(SPECIFIC, study.controls)
        for n in counts
    ] + [topk_consistency_path(model, d, n) for d in study.datasets for n in counts]


def agreement_files(model):
    """The agreements of methods' sets, at each K label as each set is labelled."""
    n = study.n_samples
    return [
        agreement_path(model, study.skill, a, b, control, n, seed, k)
        for a, b, control, seed, k in study.analyses.agreements()
    ]


def localization_files(model):
    """A planted model's localization table (none for other models)."""
    return (
        [localization_path(model)] if model in study.models.built_as("planted") else []
    )


def study_set_paths(model):
    """The files of the study's sets on ``model`` (Analyses.sets), in that order."""
    n = study.n_samples
    return [
        mask_path(model, study.skill, method, control, n, seed, k)
        for method, control, seed, k in study.analyses.sets()
    ]


def subskill_overlap_files(model):
    return [subskill_overlap_path(model, *c) for c in study.subskills.overlaps()]


def final_outputs():
    return (
        [table_path(t) for t in TABLES]
        + [table_path(t, summary=True) for t in TABLES]
        + [table_path("samples")]
        + [plot_path(f) for f in FIGURES]
        + [plot_path(t, "html") for t in TABLES]
    )
