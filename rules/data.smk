"""Stage 0: the project's own synthetic tasks and their lm-eval task configs."""


rule synthetic_data:
    output:
        train=f"{R}/data/synthetic/{{task}}/train.jsonl",
        test=f"{R}/data/synthetic/{{task}}/test.jsonl",
    log:
        "logs/synthetic_data/{task}.log",
    benchmark:
        f"{R}/benchmarks/synthetic_data/{{task}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        n_train=lambda wc: config["synthetic"]["tasks"][wc.task]["n_train"],
        n_test=lambda wc: config["synthetic"]["tasks"][wc.task]["n_test"],
        seed=config.get("synthetic", {}).get("seed", 0),
    script:
        "../workflow_scripts/synthetic_data.py"


rule task_config:
    input:
        test=f"{R}/data/synthetic/{{task}}/test.jsonl",
    output:
        f"{R}/tasks/toy_{{task}}.yaml",
    log:
        "logs/task_config/{task}.log",
    benchmark:
        f"{R}/benchmarks/task_config/{{task}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../workflow_scripts/task_config.py"
