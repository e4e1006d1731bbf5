"""mathneuro.plan: Snakemake's jobs for a config, each priced by its rule's cost model, scheduled."""

from __future__ import annotations

import re

import pytest

from mathneuro import plan
from mathneuro.plan import CPU, H100, CostModel, Job, make_plan, schedule

from dag import REPO


def job(rule: str, outputs=(), inputs=(), gpu: int = 0, **wildcards) -> Job:
    return Job(rule, frozenset(outputs), frozenset(inputs), tuple(sorted((k, str(v)) for k, v in wildcards.items())),
               (("gpu", str(gpu)),))


# The schedule ------------------------------------------------------------------------------------

A, B, C = job("a", ["a"]), job("b", ["b"], ["a"]), job("c", ["c"])
G1, G2 = job("g1", ["g1"], gpu=1), job("g2", ["g2"], gpu=1)
SECONDS = {A: 3.0, B: 5.0, C: 4.0, G1: 10.0, G2: 6.0}
GPUS = {j: int(j.res["gpu"]) for j in SECONDS}

SCHEDULES = [
    # jobs, GPUs, cores, wall seconds
    ([A, B], 0, 4, 8.0),  # b reads a: one after the other, whatever the cores
    ([A, C], 0, 1, 7.0),  # one core: one after the other
    ([A, C], 0, 2, 4.0),  # two: side by side
    ([A, B, C], 0, 2, 8.0),  # c beside the chain
    ([G1, G2], 1, 8, 16.0),  # one GPU: the GPU jobs queue, cores do not help
    ([G1, G2], 2, 1, 10.0),
    ([G1, G2, A, B, C], 1, 1, 16.0),  # the GPU's queue outlasts the core's 12 s
    ([G1, A, B, C], 1, 1, 12.0),
]


@pytest.mark.parametrize("jobs, gpus, cores, wall", SCHEDULES)
def test_the_schedule_waits_for_inputs_and_for_free_gpus_and_cores(jobs, gpus, cores, wall):
    assert schedule(jobs, SECONDS, GPUS, gpus=gpus, cores=cores) == wall


def test_a_job_needing_more_gpus_than_the_schedule_has_is_an_error():
    with pytest.raises(ValueError, match="needs 1 GPUs"):
        schedule([G1], SECONDS, GPUS, gpus=0, cores=4)


# The cost model ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def config():
    return plan.load_config([REPO / "config.yaml"])


def test_a_collection_costs_its_tokens_times_two_flops_a_parameter(config):
    costs = CostModel(config)
    small, large = (job("collect_activations", model="toy", dataset="math", n=n, seed=0) for n in (100, 500))
    parameters = float(config["models"]["toy"]["size_b"]) * 1e9
    extra_tokens = 400 * plan.SYNTHETIC_SAMPLE_TOKENS
    assert costs.seconds(large) - costs.seconds(small) == pytest.approx(extra_tokens * 2 * parameters / CPU.flops)


def test_gpu_jobs_are_priced_on_the_gpu_and_the_rest_on_the_cpu(config):
    costs = CostModel(config)
    on_cpu, on_gpu = (job("collect_activations", gpu=g, model="toy", dataset="math", n=500, seed=0) for g in (0, 1))
    assert costs.device(on_cpu) is CPU and costs.device(on_gpu) is H100
    assert costs.seconds(on_gpu) - H100.start_s < costs.seconds(on_cpu) - CPU.start_s  # more FLOP/s


@pytest.mark.parametrize("suite, cheaper", [
    ({"tasks": ["gsm8k_cot"], "limit": 20}, {"tasks": ["gsm8k_cot"], "limit": 20, "max_gen_toks": 32}),
    ({"tasks": ["gsm8k_cot"]}, {"tasks": ["gsm8k_cot"], "limit": 200}),
    ({"tasks": ["gsm8k_cot"], "limit": 20}, {"tasks": ["gsm8k_cot"], "limit": 20, "num_fewshot": 1}),
    ({"tasks": ["mmlu"], "limit": 10}, {"tasks": ["mmlu_anatomy"], "limit": 10}),  # per subtask: 57 x 10 items
    ({"tasks": ["race", "mmlu_anatomy"]}, {"tasks": ["race"]}),
])
def test_an_evaluation_costs_less_with_fewer_items_tokens_or_tasks(config, suite, cheaper):
    def seconds(spec):
        study = {**config, "models": {"m": {**config["models"]["toy"], "size_b": 1.0}},
                 "evaluation": {**config["evaluation"], "suites": {"s": spec}}}
        return CostModel(study).seconds(job("evaluate", model="m", suite="s"))

    assert seconds(cheaper) < seconds(suite)


def test_tasks_without_a_price_are_named_in_the_report(config):
    study = {**config, "evaluation": {**config["evaluation"], "suites": {"s": {"tasks": ["hellaswag", "toy_math"]}}}}
    costs = CostModel(study)
    evaluation = job("evaluate", ["e"], model="toy", suite="s")
    costs.seconds(evaluation)
    text = plan.report(make_plan([evaluation], costs), costs, gpus=0, cores=1)
    assert costs.unknown_tasks == {"hellaswag"} and "not in mathneuro.plan.TASKS): hellaswag." in text


def test_a_set_costs_its_bits_on_disk(config):
    mask = job("select_set", ["m"], model="toy")
    assert CostModel(config).disk_bytes(mask) >= float(config["models"]["toy"]["size_b"]) * 1e9 / 8


# The plan of a real config ---------------------------------------------------------------------------


def _job_stats(text: str) -> dict[str, int]:
    """Snakemake's own "Job stats" table of a dry run."""
    table = text.split("Job stats:")[1].split("total")[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, re.M)}


@pytest.fixture(scope="module")
def default_plan(tmp_path_factory):
    import subprocess
    import sys

    workdir = tmp_path_factory.mktemp("plan")
    done = subprocess.run([sys.executable, "-m", "mathneuro.plan", "--directory", str(workdir), "--gpus", "0",
                           "--cores", "2"], capture_output=True, text=True, cwd=REPO, check=True)
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--directory", str(workdir)],
                         capture_output=True, text=True, cwd=REPO, check=True)
    return done.stdout, _job_stats(dry.stdout + dry.stderr)


def test_the_plan_counts_the_jobs_of_every_rule_as_snakemake_does(default_plan):
    text, stats = default_plan
    rows = dict(re.findall(r"^\| (\w+) \| (\d+) \|", text, re.M))
    assert {rule: int(n) for rule, n in rows.items()} == stats
    assert f"{sum(stats.values())} jobs, 0 of them on GPUs" in text


def test_the_measured_column_compares_as_many_jobs_as_were_measured(tmp_path, config):
    jobs = [job("collect_activations", [f"s{n}"], model="toy", dataset="math", n=n, seed=0) for n in (10, 500)]
    costs = CostModel(config)
    folder = tmp_path / "benchmarks" / "collect_activations"
    folder.mkdir(parents=True)
    (folder / "one.tsv").write_text("s\th:m:s\n12.5\t0:00:12\n")
    measured = plan.measured_seconds(tmp_path)
    assert measured == {"collect_activations": (1, 12.5)}
    text = plan.report(make_plan(jobs, costs), costs, gpus=0, cores=1, measured=measured)
    mean = sum(map(costs.seconds, jobs)) / 2
    assert f"| {mean / 12.5:.2f} |" in text


def test_rules_sharing_a_benchmark_folder_are_compared_together(tmp_path, config):
    jobs = [job("evaluate_base", ["b"], model="toy", suite="toy"), job("evaluate", ["e"], model="toy", suite="toy")]
    folder = tmp_path / "benchmarks" / "evaluate"
    folder.mkdir(parents=True)
    for name in ("base", "edited"):
        (folder / f"{name}.tsv").write_text("s\th:m:s\n10\t0:00:10\n")
    costs = CostModel(config)
    text = plan.report(make_plan(jobs, costs), costs, gpus=0, cores=1, measured=plan.measured_seconds(tmp_path))
    estimate = sum(map(costs.seconds, jobs))
    assert re.search(rf"^\| evaluate \| 2 \|.*\| 20 s \| {estimate / 20:.2f} \|$", text, re.M)
    assert "evaluate_base" not in text
