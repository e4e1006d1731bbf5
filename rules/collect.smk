"""Stage 1: activation statistics, once per (model, data set, n samples, seed).

Draws are prefix-stable (the first n texts of a draw of m > n texts with the same seed are the
draw of n), so the consistency analysis' smaller sample counts are the main draws' prefixes, and
each count is its own job: adding a count never reruns another.
"""


rule collect_activations:
    input:
        model=model_input,
        data=dataset_input,
    output:
        stats_path("{model}", "{dataset}", "{n}", "{seed}"),
    log:
        "logs/collect_activations/{model}/{dataset}/n{n}/seed{seed}.log",
    benchmark:
        f"{RESULTS}/benchmarks/collect_activations/{{model}}/{{dataset}}/n{{n}}/seed{{seed}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: model_threads
    resources:
        gpu=gpus,
        mem_mb=model_job_mem_mb,
        runtime=runtime_min(5),
    params:
        code=code("collect_activations.py"),
        content=content(model_paths, dataset_paths),
        model=model_params,
        spec=lambda wc: study.data.spec(wc.dataset, wc.n, wc.seed),
        local_data=dataset_local_data,
        batch_size=lambda wc: study.models[wc.model]["collect_batch_size"],
        max_length=config["identification"]["max_length"],
        statistic=config["identification"]["statistic"],
        targets=study.targets,
    script:
        "../workflow_scripts/collect_activations.py"


rule snip_scores:
    """SNIP's gradient-based importance of the same draw (mathneuro.snip), for the methods that
    rank by it (mathneuro.methods: importance "gradients"); its jobs exist only where one is used.
    """
    input:
        model=model_input,
        data=dataset_input,
    output:
        snip_path("{model}", "{dataset}", "{n}", "{seed}"),
    log:
        "logs/snip_scores/{model}/{dataset}/n{n}/seed{seed}.log",
    benchmark:
        f"{RESULTS}/benchmarks/snip_scores/{{model}}/{{dataset}}/n{{n}}/seed{{seed}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: model_threads
    resources:
        gpu=gpus,
        mem_mb=mem_mb(8000),  # the weights, their gradients and the scores
        runtime=runtime_min(20),
    params:
        code=code("snip_scores.py"),
        content=content(model_paths, dataset_paths),
        model=model_params,
        spec=lambda wc: study.data.spec(wc.dataset, wc.n, wc.seed),
        local_data=dataset_local_data,
        max_length=config["identification"]["max_length"],
        targets=study.targets,
    script:
        "../workflow_scripts/snip_scores.py"
