"""Stage 2: top-K sets, the methods' masks (difference and baselines), and their consistency."""


rule select_masks:
    """Top-K sets of the skill and every control, then MathNeuro = TopK(skill) - TopK(control),
    random (same count per matrix) and Wanda = TopK(skill), for every K: one model load.
    """
    input:
        model=model_input,
        stats=lambda wc: [
            stats_path(wc.model, d, wc.n, wc.seed) for d in [SKILL] + CONTROLS
        ],
    output:
        topk=[
            topk_path("{model}", d, "{n}", "{seed}", k)
            for d in [SKILL] + CONTROLS
            for k in K
        ],
        masks=[
            mask_path("{model}", method, control, "{n}", "{seed}", k)
            for method in SPECIFIC
            for control in CONTROLS
            for k in K
        ],
        counts=[
            counts_path("{model}", "topk", control, "{n}", "{seed}")
            for control in CONTROLS
        ],
    log:
        "logs/select_masks/{model}/n{n}/seed{seed}.log",
    benchmark:
        f"{R}/benchmarks/select_masks/{{model}}/n{{n}}/seed{{seed}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=cpu_mem_mb,
        runtime=runtime_min(5),
    params:
        model=model_params,
        skill=SKILL,
        controls=CONTROLS,
        fractions=K,
        scope=ID.get("scope", "matrix"),
        include=ID.get("include"),
        exclude=ID.get("exclude"),
        labels=lambda wc: {
            "model": wc.model,
            "n_samples": int(wc.n),
            "seed": int(wc.seed),
        },
    script:
        "../workflow_scripts/select_masks.py"


rule lape_mask:
    input:
        model=model_input,
        skill=lambda wc: stats_path(wc.model, SKILL, wc.n, wc.seed),
        control=lambda wc: stats_path(wc.model, wc.control, wc.n, wc.seed),
    output:
        mask=mask_path("{model}", "lape", "{control}", "{n}", "{seed}", LAPE_K),
        counts=counts_path("{model}", "lape", "{control}", "{n}", "{seed}"),
    log:
        "logs/lape_mask/{model}/{control}/n{n}/seed{seed}.log",
    benchmark:
        f"{R}/benchmarks/lape_mask/{{model}}/{{control}}/n{{n}}/seed{{seed}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=cpu_mem_mb,
        runtime=runtime_min(5),
    params:
        model=model_params,
        skill=SKILL,
        k=LAPE_K,
        settings=canonical(config.get("lape", {})),
        include=ID.get("include"),
        exclude=ID.get("exclude"),
        labels=lambda wc: {
            "model": wc.model,
            "control": wc.control,
            "n_samples": int(wc.n),
            "seed": int(wc.seed),
        },
    script:
        "../workflow_scripts/lape_mask.py"


if DRAW_N:

    rule select_draws:
        """MathNeuro masks of the consistency draws: TopK(skill) - TopK(control) at consistency.k,
        for every n of one seed's draw: one model load.
        """
        input:
            model=model_input,
            stats=lambda wc: [
                draw_stats_path(wc.model, d, wc.seed, n)
                for d in [SKILL] + CONTROLS
                for n in DRAW_N
            ],
        output:
            [
                draw_mask_path("{model}", c, "{seed}", n)
                for c in CONTROLS
                for n in DRAW_N
            ],
        log:
            "logs/select_draws/{model}/seed{seed}.log",
        benchmark:
            f"{R}/benchmarks/select_draws/{{model}}/seed{{seed}}.tsv"
        conda:
            "../envs/mathneuro.yaml"
        threads: 1
        resources:
            mem_mb=cpu_mem_mb,
            runtime=runtime_min(5),
        params:
            model=model_params,
            skill=SKILL,
            controls=CONTROLS,
            sizes=DRAW_N,
            k=CONSISTENCY["k"],
            fraction=K[CONSISTENCY["k"]],
            scope=ID.get("scope", "matrix"),
            include=ID.get("include"),
            exclude=ID.get("exclude"),
        script:
            "../workflow_scripts/select_draws.py"


rule consistency:
    """Overlap of MathNeuro sets identified from independent draws of n samples."""
    input:
        lambda wc: [
            consistency_mask(wc.model, wc.control, wc.n, s)
            for s in CONSISTENCY["seeds"]
        ],
    output:
        f"{R}/{{model}}/consistency/{{control}}/n{{n}}.parquet",
    log:
        "logs/consistency/{model}/{control}/n{n}.log",
    benchmark:
        f"{R}/benchmarks/consistency/{{model}}/{{control}}/n{{n}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=cpu_mem_mb,
        runtime=runtime_min(2),
    params:
        seeds=CONSISTENCY["seeds"],
        k=CONSISTENCY["k"],
        fraction=K[CONSISTENCY["k"]],
        labels=lambda wc: {
            "model": wc.model,
            "control": wc.control,
            "n_samples": int(wc.n),
        },
    script:
        "../workflow_scripts/consistency.py"
