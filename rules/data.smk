"""Stage 0: data. The project's synthetic tasks, local copies of hub data sets, and one folder of
lm-eval task YAMLs per evaluation suite."""


rule synthetic_data:
    output:
        train=f"{RESULTS}/data/synthetic/{{task}}/train.jsonl",
        test=f"{RESULTS}/data/synthetic/{{task}}/test.jsonl",
    log:
        "logs/synthetic_data/{task}.log",
    benchmark:
        f"{RESULTS}/benchmarks/synthetic_data/{{task}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code=code("synthetic_data.py"),
        n_train=lambda wc: config["synthetic"]["tasks"][wc.task]["n_train"],
        n_test=lambda wc: config["synthetic"]["tasks"][wc.task]["n_test"],
        seed=config.get("synthetic", {}).get("seed"),
    script:
        "../workflow_scripts/synthetic_data.py"


rule mmlu_records:
    """MMLU's original release (CSV) as cais/mmlu hub records, for local_data.<id>.mmlu_release."""
    input:
        by_content(release_paths),
    output:
        directory(study.data.release_dir("{hub}")),
    log:
        "logs/mmlu_records/{hub}.log",
    benchmark:
        f"{RESULTS}/benchmarks/mmlu_records/{{hub}}.tsv"
    wildcard_constraints:
        hub="|".join(map(re.escape, study.data.releases)) or "(?!)",
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=code("mmlu_records.py"),
        content=content(release_paths),
    script:
        "../workflow_scripts/mmlu_records.py"


rule suite_tasks:
    """The lm-eval task YAMLs one suite evaluates: the bits per byte of data sets' held-out texts
    (bpb_<data set>), and every other task, lm-eval's or the project's (the toy's, EGSM), included
    unchanged with its data redirected to local copies (mathneuro.tasks)."""
    input:
        unpack(suite_inputs),
        bpb=bpb_inputs,
    output:
        directory(suite_dir("{suite}")),
    log:
        "logs/suite_tasks/{suite}.log",
    benchmark:
        f"{RESULTS}/benchmarks/suite_tasks/{{suite}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=code("suite_tasks.py"),
        content=content(suite_paths, bpb_paths),
        tasks=lambda wc: study.suites.tasks(wc.suite),
        lm_eval=suite_lm_eval,
        definitions=suite_definitions,  # the project's task files it uses (mathneuro/lm_tasks)
        bpb=bpb_params,
    script:
        "../workflow_scripts/suite_tasks.py"
