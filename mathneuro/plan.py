"""What a study costs before it starts: the jobs Snakemake plans for a config, each priced by a
cost model, and the study's GPU-hours, wall time at a number of GPUs, and disk.

    python -m mathneuro.plan --configfile configs/models/llama-3.2-1b-it.yaml --gpus 8

The jobs are Snakemake's own: a dry run of the whole study (``--forceall``; ``--left``: only what
is still to run here), parsed with their wildcards, resources and files. Each job is priced by
its rule's cost model from what it reads in the config:

* **forward work**: a model job's tokens times 2 FLOPs per parameter (``size_b``), at a
  device's rate: a collection reads ``n`` samples of its data set, SNIP adds a backward pass (3x),
  an evaluation each task's items (its ``limit`` or its test size: :data:`TASKS`) at the task's
  prompt length, plus the decoding steps of generated answers (every answer taken to its
  ``max_gen_toks``, an upper bound), a fine-tuning its steps times batch times tokens (3x);
* **start**: every job's start (Python, imports; on a GPU, CUDA) and its model's load from disk;
* **per job**: the CPU rules that do not run a model (sets, overlaps, tables) at their measured
  seconds, the set rules plus a time per parameter they read.

The wall time is a list schedule of the DAG: each job starts as soon as what it reads is written
and a GPU (its model's ``gpus``) or a core is free, longest job first. Disk counts every output:
a set's mask 1 bit per parameter, a model folder its weights, the rest as measured.

The coefficients: the CPU's (:data:`CPU`) were measured on this project's machine (2 cores of an
AMD EPYC, torch 2.13 CPU build; the toy demo's and the SmolLM2 study's benchmark files and
``benchmarks/bench_collect.py``); the GPU's (:data:`H100`) are **estimates** from the card's
datasheet (a share of its bf16 peak and of its memory bandwidth) until a GPU run measures them.
Token counts of hub data sets are their mean characters over 4 (measured on GSM8K's and MMLU's
files; RACE's and MATH's from their papers). ``--measured results`` prints each rule's estimate
beside the seconds its jobs took in a finished run (its benchmark files), to check or refit them.
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# Snakemake's dry run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One job of a dry run: its rule, files, wildcards and resources (as Snakemake prints them)."""

    rule: str
    outputs: frozenset[str]
    inputs: frozenset[str] = field(compare=False)
    wildcards: tuple[tuple[str, str], ...] = field(compare=False)
    resources: tuple[tuple[str, str], ...] = field(compare=False, default=())
    local: bool = field(compare=False, default=False)

    @property
    def wc(self) -> dict[str, str]:
        return dict(self.wildcards)

    @property
    def res(self) -> dict[str, int | str]:
        return {key: int(value) if value.isdigit() else value for key, value in self.resources}


_BLOCK = re.compile(r"^(local)?rule (\w+):\n((?:    .*\n?)*)", re.M)


def parse_jobs(text: str) -> list[Job]:
    """The jobs a dry run (``snakemake -n``) lists, with their inputs, outputs, wildcards and resources."""
    jobs = []
    for match in _BLOCK.finditer(text):
        fields = dict(re.findall(r"^    (\w+): (.*)$", match.group(3), re.M))

        def files(key: str) -> frozenset[str]:
            return frozenset(f.strip() for f in fields.get(key, "").split(",") if f.strip())

        def pairs(key: str) -> tuple[tuple[str, str], ...]:
            return tuple(sorted(tuple(part.strip().split("=", 1)) for part in fields.get(key, "").split(",")
                                if "=" in part))

        jobs.append(Job(match.group(2), files("output"), files("input"), pairs("wildcards"), pairs("resources"),
                        local=bool(match.group(1))))
    return jobs


def dry_run(configfiles: Iterable[str | os.PathLike[str]], *, workdir: str | os.PathLike[str] = ".",
            left: bool = False, snakefile: str | os.PathLike[str] = REPO / "Snakefile") -> list[Job]:
    """The jobs Snakemake plans for the study of ``configfiles`` in ``workdir``: every job of the
    study, or with ``left`` those still to run there. ``offline`` is set false for the dry run
    alone (an execution setting: a plan needs no hub cache)."""
    command = [sys.executable, "-m", "snakemake", "-n", "-s", str(snakefile), "--directory", str(workdir),
               "--configfile", *map(str, configfiles), "--config", "offline=False", *([] if left else ["--forceall"])]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"snakemake's dry run failed:\n{(done.stdout + done.stderr)[-4000:]}")
    return parse_jobs(done.stdout + done.stderr)


# Cost models ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    """What a job's time is made of on one kind of device."""

    name: str
    flops: float  # FLOP/s of a batched forward pass (prefill)
    step_s: float  # least seconds of one decoding step of a generation batch (overheads, memory reads)
    bandwidth: float  # bytes/s read per decoding step (the weights once per step)
    start_s: float  # a job's start: Python, torch, transformers (and CUDA) imported
    load_rate: float  # bytes/s a model loads from disk
    measured: bool


# 2 cores of an AMD EPYC, 1 thread a job: a plain forward of a 49.8M-parameter Llama 2.7e10 FLOP/s
# (benchmarks/bench_collect.py, machine shared); SmolLM2's evaluations (20 gsm8k_cot items of 192
# tokens, 80 MMLU items, 40 bits-per-byte texts: 270 s an edited model, docs/results.md) fit 4e10.
CPU = Device("cpu (measured here)", flops=4e10, step_s=0.02, bandwidth=2e10, start_s=4.0, load_rate=5e8, measured=True)
# An H100 SXM's datasheet: 989 TFLOP/s bf16 dense, 3.35 TB/s; a third of the first and 60 % of the
# second reached by Hugging Face models in lm-eval's batches (an assumption), and 25 ms a decoding
# step at least (generate's Python and kernel launches). Not measured: no GPU run yet.
H100 = Device("H100 (estimated)", flops=3.3e14, step_s=0.025, bandwidth=2e12, start_s=25.0, load_rate=1e9,
              measured=False)
DEVICES = {"cpu": CPU, "h100": H100}

CHARS_PER_TOKEN = 4.0
# Mean characters of one sample in the paper's templates: GSM8K train ("Question: ... Answer: ...")
# and MMLU (question and four choices) measured on their files; RACE (a 321-word article and its
# question) and MATH (problem and solution) from their papers' statistics.
SAMPLE_CHARS = {"openai/gsm8k": 540, "gsm8k": 540, "cais/mmlu": 470, "mmlu": 470, "ehovy/race": 2000,
                "race": 2000, "hendrycks/competition_math": 900, "EleutherAI/hendrycks_math": 900}
DEFAULT_SAMPLE_CHARS = 1000
SYNTHETIC_SAMPLE_TOKENS = 60  # the toy's tasks, in its tokenizer (one digit or word a token)


@dataclass(frozen=True)
class Task:
    """An lm-eval task's size for pricing: items (all subtasks), subtasks (lm-eval's ``limit``
    is per subtask), tokens of the question and of each few-shot example, requests an item
    (a multiple choice of several tokens scores each choice), answer tokens (generated)."""

    items: int
    subtasks: int = 1
    question_tokens: int = 100
    example_tokens: int = 0
    shots: int = 0
    requests: int = 1
    generated: int = 0


# lm-eval's defaults (test sizes, shots, max_gen_toks 256) and the project's tasks.
TASKS = {
    "gsm8k_cot": Task(1319, question_tokens=60, example_tokens=110, shots=8, generated=256),
    "gsm8k": Task(1319, question_tokens=60, example_tokens=135, shots=5, generated=256),
    "minerva_math": Task(5000, subtasks=7, question_tokens=100, example_tokens=230, shots=4, generated=256),
    "mmlu": Task(14042, subtasks=57, question_tokens=130),
    "race": Task(1045, question_tokens=550, requests=4),
    "egsm": Task(1000, question_tokens=80, generated=256),
    "egsm_fewshot": Task(1000, question_tokens=80, example_tokens=110, shots=8, generated=256),
    "toy_": Task(200, question_tokens=40, generated=8),  # every toy task: 200 test items
}
UNKNOWN_TASK = Task(1000, question_tokens=300)
MMLU_SUBJECT = Task(246, question_tokens=130)  # 14,042 items over 57 subjects


def task_profile(name: str) -> tuple[Task, bool]:
    """The pricing of lm-eval task ``name``, and whether it is known (else an assumed one)."""
    if name in TASKS:
        return TASKS[name], True
    if name.startswith("mmlu_"):
        return MMLU_SUBJECT, True
    if name.startswith("toy_"):
        return TASKS["toy_"], True
    return UNKNOWN_TASK, False


# Seconds and bytes of the jobs that run no model (measured on the toy demo: the sets read the
# model's weights and the statistics, the tables every evaluation's rows).
RULE_SECONDS = {"synthetic_data": 1.5, "suite_tasks": 3.0, "mmlu_records": 5.0, "shipped_toy_model": 0.5,
                "consistency": 3.0, "topk_consistency": 3.0, "subskill_overlap": 3.0, "method_agreement": 3.0,
                "localization": 4.0, "aggregate": 12.0, "plots": 10.0, "all": 0.0}
# The set rules read the model's weights one matrix at a time: a start of 2.1 s, then a top-K set
# 24.1 s and a difference (with saving) 10.3 s at 0.973B parameters (benchmarks/bench_split.py).
SET_START_S = 2.1
SET_SECONDS_PER_PARAMETER = {"top_k": 2.5e-8, "snip_top_k": 2.5e-8, "select_set": 1.1e-8, "planted_random": 1.1e-8}
SET_RULES = set(SET_SECONDS_PER_PARAMETER)
MODEL_RULES = {"collect_activations", "snip_scores", "evaluate", "evaluate_base", "evaluate_finetuned",
               "evaluate_finetuned_unedited", "finetune", "finetune_unedited", "train_toy_model",
               "train_plant_base", "plant_model", "random_model", "dequantize_gguf", "export_model",
               "export_finetuned", "export_finetuned_unedited"}
BYTES_PER_PARAMETER = {"float32": 4, "bfloat16": 2, "float16": 2}


class CostModel:
    """Seconds and bytes of the jobs of one study (its validated config)."""

    def __init__(self, config: Mapping[str, Any], gpu: Device = H100, cpu: Device = CPU):
        self.config, self.gpu, self.cpu = config, gpu, cpu
        self.unknown_tasks: set[str] = set()

    # what a job reads from the config

    def model(self, job: Job) -> Mapping[str, Any]:
        return self.config["models"][job.wc["model"]]

    def parameters(self, job: Job) -> float:
        return float(self.model(job)["size_b"]) * 1e9

    def device(self, job: Job) -> Device:
        return self.gpu if int(job.res.get("gpu", 0) or 0) > 0 else self.cpu

    def sample_tokens(self, dataset: str) -> float:
        """Tokens of one sample: the toy's, a JSON-lines file's mean line over 4 characters, or a
        hub data set's (:data:`SAMPLE_CHARS`), at most ``max_length``."""
        spec = self.config["datasets"].get(dataset, {})
        path = str(spec.get("path", ""))
        if spec.get("source") == "synthetic" or path.startswith("results/data/synthetic/"):
            tokens = SYNTHETIC_SAMPLE_TOKENS
        elif spec.get("source") == "json" and Path(path).is_file():
            tokens = _mean_line_chars(Path(path)) / CHARS_PER_TOKEN
        else:
            tokens = SAMPLE_CHARS.get(path, SAMPLE_CHARS.get(dataset, DEFAULT_SAMPLE_CHARS)) / CHARS_PER_TOKEN
        return min(tokens, self.config["identification"]["max_length"])

    # seconds

    def seconds(self, job: Job) -> float:
        if job.rule in SET_RULES:
            return SET_START_S + SET_SECONDS_PER_PARAMETER[job.rule] * self.parameters(job)
        if job.rule not in MODEL_RULES:
            return RULE_SECONDS.get(job.rule, 2.0)
        device = self.device(job)
        start = device.start_s + self.parameters(job) * self._bytes(job) / device.load_rate
        return start + self._work_seconds(job, device)

    def _bytes(self, job: Job) -> int:
        return BYTES_PER_PARAMETER.get(self.model(job).get("dtype", "float32"), 4)

    def _work_seconds(self, job: Job, device: Device) -> float:
        flops = 2 * self.parameters(job)
        wc = job.wc
        if job.rule in ("collect_activations", "snip_scores"):
            tokens = int(wc["n"]) * self.sample_tokens(wc["dataset"])
            return (3 if job.rule == "snip_scores" else 1) * tokens * flops / device.flops
        if job.rule.startswith("evaluate"):
            return self._evaluation_seconds(job, device)
        if job.rule.startswith("finetune") or job.rule in ("train_toy_model", "train_plant_base"):
            spec = self._training_spec(job)
            tokens = spec["steps"] * spec["batch_size"] * spec.get("max_length", 256)
            return 3 * tokens * flops / device.flops
        return self.parameters(job) * self._bytes(job) / device.load_rate  # write or convert the weights

    def _training_spec(self, job: Job) -> Mapping[str, Any]:
        if job.rule.startswith("finetune"):
            return self.config["finetune"][job.wc["edit"]]
        toy = self.config.get("toy_model", {})
        return {"steps": toy.get("steps", 2400), "batch_size": toy.get("batch_size", 32), "max_length": 64}

    def _evaluation_seconds(self, job: Job, device: Device) -> float:
        suite = self.config["evaluation"]["suites"].get(job.wc["suite"]) or self._subskill_suite(job.wc["suite"])
        batch = self.model(job).get("eval_batch_size")
        batch = int(batch) if str(batch).isdigit() else 64
        flops, total = 2 * self.parameters(job), 0.0
        for name in suite["tasks"]:
            task, items, prompt = self._task(name, suite)
            total += items * task.requests * prompt * flops / device.flops
            if task.generated:
                generated = suite.get("max_gen_toks") or task.generated
                steps = generated * math.ceil(items / batch)
                step = max(device.step_s, self.parameters(job) * self._bytes(job) / device.bandwidth)
                total += steps * step + items * generated * flops / device.flops
        return total + len(suite["tasks"])  # lm-eval builds each task: about a second

    def _subskill_suite(self, label: str) -> Mapping[str, Any]:
        return ((self.config.get("subskills") or {}).get("suites") or {})[label]

    def _task(self, name: str, suite: Mapping[str, Any]) -> tuple[Task, int, float]:
        """A task's pricing, its evaluated items and tokens a request."""
        if name.startswith("bpb_"):
            task = Task(1000, question_tokens=int(self.sample_tokens(name[4:])))
        else:
            task, known = task_profile(name)
            if not known:
                self.unknown_tasks.add(name)
        limit = suite.get("limit") or (suite.get("subset") or {}).get("n")
        items = min(task.items, limit * task.subtasks) if limit else task.items
        shots = task.shots if suite.get("num_fewshot") is None else suite["num_fewshot"]
        return task, items, task.question_tokens + shots * task.example_tokens

    # bytes

    def disk_bytes(self, job: Job) -> float:
        if job.rule in SET_RULES:
            return self.parameters(job) / 8 + 20_000  # the mask, 1 bit a parameter, and its counts
        if job.rule in ("collect_activations", "snip_scores"):
            # one float per input feature of every matrix (SNIP: a score per parameter)
            return 4 * self.parameters(job) if job.rule == "snip_scores" else 64 * math.sqrt(self.parameters(job))
        if job.rule.startswith("evaluate"):
            return 200_000  # a table, lm-eval's results and every item's answer
        if job.rule in MODEL_RULES - {"collect_activations", "snip_scores"} and "model" in job.wc:
            return self.parameters(job) * self._bytes(job)  # a model folder
        return 100_000


def _mean_line_chars(path: Path, lines: int = 2000) -> float:
    with path.open(encoding="utf-8") as handle:
        lengths = [len(line) for _, line in zip(range(lines), handle)]
    return sum(lengths) / max(len(lengths), 1)


# The plan --------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """Jobs, their seconds and bytes, and the schedule's wall time."""

    jobs: list[Job]
    seconds: dict[Job, float]
    disk: dict[Job, float]
    gpus: dict[Job, int]

    def by_rule(self, group: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
        """Jobs, GPU jobs, seconds, GPU-hours and bytes per rule (``group``: rule -> the row it
        joins)."""
        rows: dict[str, dict[str, float]] = defaultdict(lambda: dict(jobs=0, gpu_jobs=0, seconds=0.0, gpu_hours=0.0, disk=0.0))
        for job in self.jobs:
            row = rows[(group or {}).get(job.rule, job.rule)]
            row["jobs"] += 1
            row["gpu_jobs"] += self.gpus[job] > 0
            row["seconds"] += self.seconds[job]
            row["gpu_hours"] += self.gpus[job] * self.seconds[job] / 3600
            row["disk"] += self.disk[job]
        return dict(rows)

    def wall_seconds(self, gpus: int, cores: int) -> float:
        return schedule(self.jobs, self.seconds, self.gpus, gpus=gpus, cores=cores)


def make_plan(jobs: list[Job], costs: CostModel) -> Plan:
    gpus = {job: int(job.res.get("gpu", 0) or 0) for job in jobs}
    return Plan(jobs, {job: costs.seconds(job) for job in jobs}, {job: costs.disk_bytes(job) for job in jobs}, gpus)


def schedule(jobs: list[Job], seconds: Mapping[Job, float], gpus_of: Mapping[Job, int], *, gpus: int,
             cores: int) -> float:
    """The wall seconds of a list schedule: a job is ready when every job writing one of its inputs
    has ended, and starts, longest first, when its GPUs (else one core) are free."""
    producer = {f: job for job in jobs for f in job.outputs}
    waits = {job: {producer[f] for f in job.inputs if f in producer and producer[f] != job} for job in jobs}
    readers: dict[Job, list[Job]] = defaultdict(list)
    for job, before in waits.items():
        for other in before:
            readers[other].append(job)
    if any(gpus_of[job] > gpus for job in jobs):
        raise ValueError(f"a job needs {max(gpus_of.values())} GPUs; the schedule has {gpus}")
    pending = {job: len(before) for job, before in waits.items()}
    ready = [job for job, n in pending.items() if n == 0]
    free = {"gpu": gpus, "core": cores}
    running: list[tuple[float, int, Job]] = []  # (end, tie, job)
    now, tie = 0.0, 0
    while ready or running:
        ready.sort(key=lambda j: -seconds[j])
        for job in list(ready):
            need = ("gpu", gpus_of[job]) if gpus_of[job] else ("core", 1)
            if free[need[0]] >= need[1]:
                free[need[0]] -= need[1]
                heapq.heappush(running, (now + seconds[job], tie, job))
                tie += 1
                ready.remove(job)
        if not running:
            raise ValueError("the jobs wait on each other")
        now, _, done = heapq.heappop(running)
        if gpus_of[done]:
            free["gpu"] += gpus_of[done]
        else:
            free["core"] += 1
        for reader in readers[done]:
            pending[reader] -= 1
            if pending[reader] == 0:
                ready.append(reader)
    return now


# Rules whose jobs write their benchmark files in another rule's folder (results/benchmarks/<folder>).
BENCHMARK_FOLDER = {"evaluate_base": "evaluate", "evaluate_finetuned": "evaluate",
                    "evaluate_finetuned_unedited": "evaluate", "finetune_unedited": "finetune",
                    "export_finetuned": "export_model", "export_finetuned_unedited": "export_model"}


def measured_seconds(results: str | os.PathLike[str]) -> dict[str, tuple[int, float]]:
    """benchmark folder (a rule's name, :data:`BENCHMARK_FOLDER`) -> (jobs, summed wall seconds) of
    a finished run's benchmark files (results/benchmarks)."""
    import csv

    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    root = Path(results) / "benchmarks"
    for path in sorted(root.rglob("*.tsv")):
        with path.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                total = totals[path.relative_to(root).parts[0]]
                total[0] += 1
                total[1] += float(row["s"])
    return {rule: (int(n), s) for rule, (n, s) in totals.items()}


# Printing ------------------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _size(size: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / 1e3:.0f} kB"


def report(plan: Plan, costs: CostModel, *, gpus: int, cores: int,
           measured: Mapping[str, tuple[int, float]] | None = None) -> str:
    """The plan as Markdown: per rule (beside ``measured`` seconds: per benchmark folder), then
    the study's totals and what the numbers rest on."""
    rows = plan.by_rule(BENCHMARK_FOLDER if measured is not None else None)
    header = "| rule | jobs | GPU jobs | job time (each) | job time (all) | disk |"
    if measured is not None:
        header += " measured (all) | estimate / measured |"
    lines = [header, "|---" * (header.count("|") - 1) + "|"]
    for rule, row in sorted(rows.items(), key=lambda item: -item[1]["seconds"]):
        cells = [rule, str(int(row["jobs"])), str(int(row["gpu_jobs"])), _duration(row["seconds"] / row["jobs"]),
                 _duration(row["seconds"]), _size(row["disk"])]
        if measured is not None:
            jobs, seconds = measured.get(rule, (0, 0.0))
            estimate = row["seconds"] / row["jobs"] * jobs  # of as many jobs as were measured
            cells += [_duration(seconds) if jobs else "-", f"{estimate / seconds:.2f}" if seconds else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    total = sum(plan.seconds.values())
    gpu_hours = sum(row["gpu_hours"] for row in rows.values())
    wall = plan.wall_seconds(gpus, cores)
    lines += ["", f"{len(plan.jobs)} jobs, {sum(g > 0 for g in plan.gpus.values())} of them on GPUs: "
              f"{gpu_hours:.1f} GPU-hours, {(total - sum(s for j, s in plan.seconds.items() if plan.gpus[j])) / 3600:.1f} "
              f"CPU-hours of jobs without a GPU; wall time about {_duration(wall)} at {gpus} GPUs and {cores} cores; "
              f"disk about {_size(sum(plan.disk.values()))}."]
    if measured is not None and (done := sum(s for _, s in measured.values())):
        estimate = sum(row["seconds"] / row["jobs"] * measured.get(rule, (0, 0.0))[0] for rule, row in rows.items())
        lines.append(f"The measured run's jobs took {_duration(done)}; estimated for the same jobs: "
                     f"{_duration(estimate)} (estimate / measured: {estimate / done:.2f}).")
    lines.append(f"Devices: GPU jobs priced as {costs.gpu.name}, the rest as {costs.cpu.name} "
                 "(mathneuro/plan.py: what each coefficient rests on).")
    if costs.unknown_tasks:
        lines.append(f"Tasks priced as {UNKNOWN_TASK.items} items of {UNKNOWN_TASK.question_tokens} tokens "
                     f"(not in mathneuro.plan.TASKS): {', '.join(sorted(costs.unknown_tasks))}.")
    return "\n".join(lines)


def load_config(configfiles: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    """The study's config as the workflow reads it: composed, validated, defaults filled in."""
    from snakemake.utils import validate

    from mathneuro.configs import compose

    config = compose([str(f) for f in configfiles] or [str(REPO / "config.yaml")])
    validate(config, str(REPO / "schemas" / "config.schema.yaml"))
    return config


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mathneuro.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="+", default=[], help="the study's config files (default: config.yaml)")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs the jobs share (default 1)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores for the jobs without a GPU")
    parser.add_argument("--gpu", choices=sorted(set(DEVICES) - {"cpu"}), default="h100", help="the GPU's cost model")
    parser.add_argument("--left", action="store_true", help="only the jobs still to run in --directory")
    parser.add_argument("--directory", default=".", help="the study's working directory (default: here)")
    parser.add_argument("--measured", metavar="RESULTS", help="a finished run's results folder: its jobs' seconds beside")
    args = parser.parse_args(argv)
    config = load_config(args.configfile or [REPO / "config.yaml"])
    jobs = dry_run(args.configfile or [REPO / "config.yaml"], workdir=args.directory, left=args.left)
    costs = CostModel(config, gpu=DEVICES[args.gpu])
    if (most := max([int(j.res.get("gpu", 0) or 0) for j in jobs], default=0)) > args.gpus:
        parser.error(f"--gpus {args.gpus}: a job of this study needs {most} (its model's gpus)")
    measured = measured_seconds(args.measured) if args.measured else None
    print(report(make_plan(jobs, costs), costs, gpus=args.gpus, cores=args.cores, measured=measured))


if __name__ == "__main__":
    main()
