"""Stage 2: the sets. TopK of each data set, one job per K; every method's set (MathNeuro, its
random baseline, LAPE, ...) one job per method, control and K, as mathneuro.methods says; and the
overlap of independent identifications. One job per (model, data set or control, n, seed, K):
adding a K, a control, a seed or a sample count adds jobs and reruns none (a set against every
control at once is labelled by all of them, so a new control makes a new set beside the finished
one).
"""


rule top_k:
    input:
        model=model_input,
        stats=lambda wc: stats_path(wc.model, wc.dataset, wc.n, wc.seed),
    output:
        mask=topk_path("{model}", "{dataset}", "{n}", "{seed}", "{k}"),
        counts=topk_path(
            "{model}", "{dataset}", "{n}", "{seed}", "{k}", ".counts.parquet"
        ),
    log:
        "logs/top_k/{model}/{dataset}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{RESULTS}/benchmarks/top_k/{{model}}/{{dataset}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(5),
    params:
        code=code("top_k.py"),
        content=content(model_paths),
        model=model_params,
        fraction=lambda wc: study.k.fraction(wc.k),
        scope=config["identification"]["scope"],
        labels=set_labels,
    script:
        "../workflow_scripts/top_k.py"


# The TopK sets of SNIP's scores (mathneuro.snip): the top_k rule on the other importance.
use rule top_k as snip_top_k with:
    input:
        model=model_input,
        stats=lambda wc: snip_path(wc.model, wc.dataset, wc.n, wc.seed),
    output:
        mask=snip_topk_path("{model}", "{dataset}", "{n}", "{seed}", "{k}"),
        counts=snip_topk_path(
            "{model}", "{dataset}", "{n}", "{seed}", "{k}", ".counts.parquet"
        ),
    log:
        "logs/snip_top_k/{model}/{dataset}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{RESULTS}/benchmarks/snip_top_k/{{model}}/{{dataset}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"


rule select_set:
    """One method's set (mathneuro.methods: what it reads and the function that makes it), against
    the controls its label names."""
    input:
        unpack(set_inputs),
    output:
        mask=mask_path(
            "{model}", "{skill}", "{method}", "{control}", "{n}", "{seed}", "{k}"
        ),
        counts=mask_path(
            "{model}",
            "{skill}",
            "{method}",
            "{control}",
            "{n}",
            "{seed}",
            "{k}",
            "counts",
        ),
    log:
        "logs/select_set/{model}/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}.log",
    benchmark:
        f"{RESULTS}/benchmarks/select_set/{{model}}/{{skill}}/{{method}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
    wildcard_constraints:
        method="|".join(made_methods()),
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(5),
    params:
        code=code("select_set.py"),
        content=content(set_model_paths),
        inputs=lambda wc: study.set_params(wc.method, wc.model),
        labels=set_labels,
    script:
        "../workflow_scripts/select_set.py"


rule consistency:
    """Overlap of the skill-specific sets (methods.SPECIFIC, against one control) identified from independent draws of n
    samples: over the whole model (pairs) and per layer and module type (layers)."""
    input:
        lambda wc: [
            mask_path(wc.model, wc.skill, SPECIFIC, wc.control, wc.n, s, CONSISTENCY_K)
            for s in study.consistency["seeds"]
        ],
    output:
        pairs=consistency_path("{model}", "{skill}", "{control}", "{n}"),
        layers=layer_overlap_path(
            consistency_path("{model}", "{skill}", "{control}", "{n}")
        ),
    log:
        "logs/consistency/{model}/{skill}/{control}/n{n}.log",
    benchmark:
        f"{RESULTS}/benchmarks/consistency/{{model}}/{{skill}}/{{control}}/n{{n}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(2),
    params:
        code=code("consistency.py"),
        seeds=study.consistency["seeds"],
        k=study.consistency["k"],
        fraction=study.k.fractions[study.consistency["k"]],
        labels=lambda wc: {
            "model": wc.model,
            "method": SPECIFIC,
            "control": wc.control,
            "n_samples": int(wc.n),
            **study.k.control_label(CONSISTENCY_K),
        },
    script:
        "../workflow_scripts/consistency.py"


# Overlap of one data set's TopK sets from independent draws of n samples, labelled as TopK
# counts are (method TOP_K, control = the data set): the consistency rule on other sets.
use rule consistency as topk_consistency with:
    input:
        lambda wc: [
            topk_path(wc.model, wc.dataset, wc.n, s, study.consistency["k"])
            for s in study.consistency["seeds"]
        ],
    output:
        pairs=topk_consistency_path("{model}", "{dataset}", "{n}"),
        layers=layer_overlap_path(topk_consistency_path("{model}", "{dataset}", "{n}")),
    log:
        "logs/topk_consistency/{model}/{dataset}/n{n}.log",
    benchmark:
        f"{RESULTS}/benchmarks/topk_consistency/{{model}}/{{dataset}}/n{{n}}.tsv"
    params:
        labels=lambda wc: {
            "model": wc.model,
            "method": TOP_K,
            "control": wc.dataset,
            "n_samples": int(wc.n),
        },


if study.subskills:

    rule subskill_overlap:
        """Overlap of the sub-skills' sets with one another (every ordered pair), at one seed and
        K: where the parts of a skill share parameters (Study.subskill_sets: which sets).
        """
        input:
            lambda wc: [
                mask_path(wc.model, skill, method, control, wc.n, wc.seed, wc.k)
                for skill, (method, control) in study.subskills.sets().items()
            ],
        output:
            subskill_overlap_path("{model}", "{method}", "{n}", "{seed}", "{k}"),
        log:
            "logs/subskill_overlap/{model}/{method}/n{n}/seed{seed}/k{k}.log",
        benchmark:
            f"{RESULTS}/benchmarks/subskill_overlap/{{model}}/{{method}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
        conda:
            "../envs/mathneuro.yaml"
        threads: 1
        resources:
            mem_mb=weights_job_mem_mb,
            runtime=runtime_min(2),
        params:
            code=code("subskill_overlap.py"),
            skills=list(study.subskills.sets()),
            labels=lambda wc: {
                "model": wc.model,
                "method": wc.method,
                "n_samples": int(wc.n),
                "seed": int(wc.seed),
                **study.k.labels(wc.k),
            },
        script:
            "../workflow_scripts/subskill_overlap.py"


if study.analyses.agreements():

    rule method_agreement:
        """How far SNIP's set and MathNeuro's, made from the same draw at the same K against the
        same control, agree (mathneuro.study.Analyses.agreements)."""
        input:
            lambda wc: [
                mask_path(
                    wc.model,
                    wc.skill,
                    m,
                    wc.control,
                    wc.n,
                    wc.seed,
                    study.k.of_set(m, wc.k),
                )
                for m in (wc.method_a, wc.method_b)
            ],
        output:
            agreement_path(
                "{model}",
                "{skill}",
                "{method_a}",
                "{method_b}",
                "{control}",
                "{n}",
                "{seed}",
                "{k}",
            ),
        log:
            "logs/method_agreement/{model}/{skill}/{method_a}+{method_b}/{control}/n{n}/seed{seed}/k{k}.log",
        benchmark:
            f"{RESULTS}/benchmarks/method_agreement/{{model}}/{{skill}}/{{method_a}}+{{method_b}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}.tsv"
        wildcard_constraints:
            method_a="|".join(METHODS),
            method_b="|".join(METHODS),
        conda:
            "../envs/mathneuro.yaml"
        threads: 1
        resources:
            mem_mb=weights_job_mem_mb,
            runtime=runtime_min(2),
        params:
            code=code("method_agreement.py"),
            methods=lambda wc: [wc.method_a, wc.method_b],
            labels=lambda wc: {
                "model": wc.model,
                "control": wc.control,
                "n_samples": int(wc.n),
                "seed": int(wc.seed),
                **study.k.labels(wc.k),
            },
        script:
            "../workflow_scripts/method_agreement.py"


if study.models.built_as("planted"):

    rule planted_random:
        """A random set of the planted set's count in every matrix, per repeat: the baseline the
        planted set itself is pruned against (mathneuro.masks.random_like)."""
        input:
            truth_path("{model}"),
        output:
            planted_random_path("{model}", "{seed}"),
        log:
            "logs/planted_random/{model}/seed{seed}.log",
        benchmark:
            f"{RESULTS}/benchmarks/planted_random/{{model}}/seed{{seed}}.tsv"
        wildcard_constraints:
            model=models_built_as("planted"),
        conda:
            "../envs/mathneuro.yaml"
        threads: 1
        resources:
            mem_mb=weights_job_mem_mb,
            runtime=runtime_min(2),
        params:
            code=code("planted_random.py"),
        script:
            "../workflow_scripts/planted_random.py"

    rule localization:
        """How well every set of the study's main draws on a planted model recovers the set S its
        skill was planted in: precision, recall and Jaccard per module type and over all
        matrices (mathneuro.tables.localization)."""
        input:
            truth=truth_path("{model}"),
            sets=per("model", study_set_paths),
        output:
            localization_path("{model}"),
        log:
            "logs/localization/{model}.log",
        benchmark:
            f"{RESULTS}/benchmarks/localization/{{model}}.tsv"
        wildcard_constraints:
            model=models_built_as("planted"),
        conda:
            "../envs/mathneuro.yaml"
        threads: 1
        resources:
            mem_mb=weights_job_mem_mb,
            runtime=runtime_min(2),
        params:
            code=code("localization.py"),
            labels=lambda wc: [
                {
                    "model": wc.model,
                    "method": method,
                    "control": control,
                    "n_samples": study.n_samples,
                    "seed": seed,
                    **study.k.labels(k),
                }
                for method, control, seed, k in study.analyses.sets()
            ],
        script:
            "../workflow_scripts/localization.py"
