"""Stage 2: the sets. TopK of each data set, one job per K; MathNeuro = TopK(skill) - TopK(control)
and its random baseline, one job per control and K; LAPE, one job per control; and the overlap of
independent identifications. One job per (model, data set or control, n, seed, K): adding a K, a
control, a seed or a sample count adds jobs and reruns none (a set against every control at once
is labelled by all of them, so a new control makes a new set beside the finished one).
"""


rule top_k:
    input:
        model=model_input,
        stats=lambda wc: stats_path(wc.model, wc.dataset, wc.n, wc.seed),
    output:
        mask=topk_path("{model}", "{dataset}", "{n}", "{seed}", "{k}"),
        counts=topk_counts_path("{model}", "{dataset}", "{n}", "{seed}", "{k}"),
    log:
        "logs/top_k/{model}/{dataset}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{R}/benchmarks/top_k/{{model}}/{{dataset}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(5),
    params:
        model=model_params,
        fraction=lambda wc: K[wc.k],
        scope=ID["scope"],
        labels=top_k_labels,
    script:
        "../workflow_scripts/top_k.py"


rule difference:
    """MathNeuro's set against one control and the random baseline with the same count in every
    matrix."""
    input:
        skill=lambda wc: topk_path(wc.model, wc.skill, wc.n, wc.seed, wc.k),
        controls=lambda wc: [topk_path(wc.model, wc.control, wc.n, wc.seed, wc.k)],
    output:
        mathneuro=mask_path(
            "{model}", "{skill}", "mathneuro", "{control}", "{n}", "{seed}", "{k}"
        ),
        random=mask_path(
            "{model}", "{skill}", "random", "{control}", "{n}", "{seed}", "{k}"
        ),
        mathneuro_counts=counts_path(
            "{model}", "{skill}", "mathneuro", "{control}", "{n}", "{seed}", "{k}"
        ),
        random_counts=counts_path(
            "{model}", "{skill}", "random", "{control}", "{n}", "{seed}", "{k}"
        ),
    log:
        "logs/difference/{model}/{skill}/{control}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{R}/benchmarks/difference/{{model}}/{{skill}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(2),
    params:
        method="mathneuro",
        labels=set_labels,
    script:
        "../workflow_scripts/difference.py"


rule difference_all:
    """MathNeuro against every control at once: TopK(skill) minus the union of their TopK sets."""
    input:
        skill=lambda wc: topk_path(wc.model, wc.skill, wc.n, wc.seed, wc.k),
        controls=lambda wc: [
            topk_path(wc.model, c, wc.n, wc.seed, wc.k)
            for c in control_sets(wc.control)
        ],
    output:
        mathneuro_all=mask_path(
            "{model}", "{skill}", "mathneuro_all", "{control}", "{n}", "{seed}", "{k}"
        ),
        mathneuro_all_counts=counts_path(
            "{model}", "{skill}", "mathneuro_all", "{control}", "{n}", "{seed}", "{k}"
        ),
    log:
        "logs/difference_all/{model}/{skill}/{control}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{R}/benchmarks/difference_all/{{model}}/{{skill}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(2),
    params:
        method="mathneuro_all",
        labels=set_labels,
    script:
        "../workflow_scripts/difference.py"


rule lape_mask:
    """LAPE's neurons of the skill, the entropy over the skill and every control at once (as Tang
    et al. and the paper's authors); K is its top_rate."""
    input:
        model=model_input,
        stats=lambda wc: [
            stats_path(wc.model, d, wc.n, wc.seed)
            for d in (wc.skill, *control_sets(wc.control))
        ],
    output:
        mask=mask_path(
            "{model}", "{skill}", "lape", "{control}", "{n}", "{seed}", "{k}"
        ),
        counts=counts_path(
            "{model}", "{skill}", "lape", "{control}", "{n}", "{seed}", "{k}"
        ),
    log:
        "logs/lape_mask/{model}/{skill}/{control}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{R}/benchmarks/lape_mask/{{model}}/{{skill}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(5),
    params:
        model=model_params,
        skill=lambda wc: wc.skill,
        settings=lambda wc: canonical({**config["lape"], "top_rate": K[wc.k]}),
        targets=target_params(),
        labels=lambda wc: set_labels(wc, "lape"),
    script:
        "../workflow_scripts/lape_mask.py"


rule consistency:
    """Overlap of MathNeuro sets (against one control) identified from independent draws of n
    samples."""
    input:
        lambda wc: [
            mask_path(
                wc.model, wc.skill, "mathneuro", wc.control, wc.n, s, CONSISTENCY["k"]
            )
            for s in CONSISTENCY["seeds"]
        ],
    output:
        consistency_path("{model}", "{skill}", "{control}", "{n}"),
    log:
        "logs/consistency/{model}/{skill}/{control}/n{n}.log",
    benchmark:
        f"{R}/benchmarks/consistency/{{model}}/{{skill}}/{{control}}/n{{n}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(2),
    params:
        seeds=CONSISTENCY["seeds"],
        k=CONSISTENCY["k"],
        fraction=K[CONSISTENCY["k"]],
        labels=lambda wc: {
            "model": wc.model,
            "method": "mathneuro",
            "control": wc.control,
            "n_samples": int(wc.n),
        },
    script:
        "../workflow_scripts/consistency.py"


# Overlap of one data set's TopK sets from independent draws of n samples, labelled as TopK
# counts are (method "topk", control = the data set): the consistency rule on other sets.
use rule consistency as topk_consistency with:
    input:
        lambda wc: [
            topk_path(wc.model, wc.dataset, wc.n, s, CONSISTENCY["k"])
            for s in CONSISTENCY["seeds"]
        ],
    output:
        topk_consistency_path("{model}", "{dataset}", "{n}"),
    log:
        "logs/topk_consistency/{model}/{dataset}/n{n}.log",
    benchmark:
        f"{R}/benchmarks/topk_consistency/{{model}}/{{dataset}}/n{{n}}.tsv"
    params:
        labels=lambda wc: {
            "model": wc.model,
            "method": "topk",
            "control": wc.dataset,
            "n_samples": int(wc.n),
        },
