"""Stage 1: activation statistics, once per (model, data set, n samples, seed), and the
consistency analysis' other sample counts as prefixes of one draw per (model, data set, seed).
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
        f"{R}/benchmarks/collect_activations/{{model}}/{{dataset}}/n{{n}}/seed{{seed}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: model_threads
    resources:
        gpu=gpus,
        mem_mb=gpu_mem_mb,
        runtime=runtime_min(5),
    params:
        model=model_params,
        spec=lambda wc: dataset_spec(wc.dataset, wc.n, wc.seed),
        sizes=lambda wc: [int(wc.n)],
        batch_size=lambda wc: model_config(wc.model).get("collect_batch_size", 8),
        max_length=ID.get("max_length", 2048),
        statistic=ID.get("statistic", "norm"),
        lape="lape" in config["methods"],
        include=ID.get("include"),
        exclude=ID.get("exclude"),
    script:
        "../workflow_scripts/collect_activations.py"


if DRAW_N:

    rule collect_draws:
        """Statistics of the first n texts of one draw of max(n) texts, for every n of
        consistency.n_samples but identification.n_samples: one pass, one model load.
        """
        input:
            model=model_input,
            data=dataset_input,
        output:
            [draw_stats_path("{model}", "{dataset}", "{seed}", n) for n in DRAW_N],
        log:
            "logs/collect_draws/{model}/{dataset}/seed{seed}.log",
        benchmark:
            f"{R}/benchmarks/collect_draws/{{model}}/{{dataset}}/seed{{seed}}.tsv"
        conda:
            "../envs/mathneuro.yaml"
        threads: model_threads
        resources:
            gpu=gpus,
            mem_mb=gpu_mem_mb,
            runtime=runtime_min(5),
        params:
            model=model_params,
            spec=lambda wc: dataset_spec(wc.dataset, max(DRAW_N), wc.seed),
            sizes=DRAW_N,
            batch_size=lambda wc: model_config(wc.model).get("collect_batch_size", 8),
            max_length=ID.get("max_length", 2048),
            statistic=ID.get("statistic", "norm"),
            lape=False,
            include=ID.get("include"),
            exclude=ID.get("exclude"),
        script:
            "../workflow_scripts/collect_activations.py"
