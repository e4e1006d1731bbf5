"""Stage 3: edit (prune/scale) on load and evaluate with lm-eval, per variant and task suite.

The edit is applied in memory when the model is loaded (`apply_mask`): no edited checkpoint is
written per variant (at 8B that would be 16 GB each); `export_model` writes one on request.
"""


rule evaluate_base:
    input:
        model=model_input,
        tasks=lambda wc: suite_dir(wc.suite),
    output:
        table=base_eval_path("{model}", "{suite}"),
        results=base_eval_path("{model}", "{suite}", "results"),
        samples=base_eval_path("{model}", "{suite}", "samples"),
    log:
        "logs/evaluate/{model}/base/{suite}.log",
    benchmark:
        f"{RESULTS}/benchmarks/evaluate/{{model}}/base/{{suite}}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: model_threads
    resources:
        gpu=gpus,
        mem_mb=model_job_mem_mb,
        runtime=runtime_min(30),
    params:
        code=code("evaluate.py"),
        content=content(model_paths),
        model=model_params,
        suite=suite,
        batch_size=lambda wc: study.models[wc.model]["eval_batch_size"],
        factor=None,
        labels=lambda wc: {"model": wc.model, "suite": wc.suite, "method": "base"},
    script:
        "../workflow_scripts/evaluate.py"


rule evaluate:
    input:
        model=model_input,
        tasks=lambda wc: suite_dir(wc.suite),
        mask=lambda wc: mask_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k
        ),
    output:
        **{
            kind: eval_path(
                "{model}",
                "{skill}",
                "{method}",
                "{control}",
                "{n}",
                "{seed}",
                "{k}",
                "{edit}",
                "{suite}",
                kind,
            )
            for kind in EVAL_SUFFIXES
        },
    log:
        "logs/evaluate/{model}/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}/{edit}/{suite}.log",
    benchmark:
        f"{RESULTS}/benchmarks/evaluate/{{model}}/{{skill}}/{{method}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}/{{edit}}/{{suite}}.tsv"
    wildcard_constraints:
        edit=edits_constraint(config["edits"]),
    conda:
        "../envs/mathneuro.yaml"
    threads: model_threads
    resources:
        gpu=gpus,
        mem_mb=model_job_mem_mb,
        runtime=runtime_min(30),
    params:
        code=code("evaluate.py"),
        content=content(model_paths),
        model=model_params,
        suite=suite,
        batch_size=lambda wc: study.models[wc.model]["eval_batch_size"],
        factor=lambda wc: study.edits[wc.edit],
        labels=lambda wc: {
            "model": wc.model,
            "suite": wc.suite,
            "method": wc.method,
            "control": wc.control,
            "n_samples": int(wc.n),
            "seed": int(wc.seed),
            **study.k_labels(wc.model, wc.k),
            **study.skill_label(wc.skill),
            "edit": wc.edit,
            "factor": study.edits[wc.edit],
        },
    script:
        "../workflow_scripts/evaluate.py"


use rule evaluate as evaluate_finetuned with:
    input:
        model=model_input,
        tasks=lambda wc: suite_dir(wc.suite),
        mask=lambda wc: mask_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k
        ),
        trained=lambda wc: trained_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k, wc.edit
        ),
    wildcard_constraints:
        edit=edits_constraint(study.finetune_edits(per_set=True)),
    params:
        factor=None,
        trained=lambda wc: config["finetune"][wc.edit]["train"],
        labels=lambda wc: {
            "model": wc.model,
            "suite": wc.suite,
            "method": wc.method,
            "control": wc.control,
            "n_samples": int(wc.n),
            "seed": int(wc.seed),
            **study.k.labels(wc.k),
            **study.skill_label(wc.skill),
            "edit": wc.edit,
            "trained": config["finetune"][wc.edit]["train"],
        },


use rule evaluate as evaluate_finetuned_unedited with:
    """A fine-tuning run that needs no set (every parameter trained from the unedited model),
    evaluated once per repeat; its rows carry no set, K or draw (mathneuro.analyses.NO_SET).
    """
    input:
        model=model_input,
        tasks=lambda wc: suite_dir(wc.suite),
        trained=lambda wc: unedited_trained_path(wc.model, wc.skill, wc.seed, wc.edit),
    output:
        **{
            kind: unedited_run_eval_path(
                "{model}", "{skill}", "{seed}", "{edit}", "{suite}", kind
            )
            for kind in EVAL_SUFFIXES
        },
    log:
        "logs/evaluate/{model}/{skill}/all/seed{seed}/{edit}/{suite}.log",
    benchmark:
        f"{RESULTS}/benchmarks/evaluate/{{model}}/{{skill}}/all/seed{{seed}}/{{edit}}/{{suite}}.tsv"
    wildcard_constraints:
        edit=edits_constraint(study.finetune_edits(per_set=False)),
    params:
        factor=None,
        trained=lambda wc: config["finetune"][wc.edit]["train"],
        labels=lambda wc: {
            "model": wc.model,
            "suite": wc.suite,
            "method": NO_SET,
            "control": NO_SET,
            "n_samples": 0,
            "seed": int(wc.seed),
            "k": NO_SET,
            **study.skill_label(wc.skill),
            "edit": wc.edit,
            "trained": config["finetune"][wc.edit]["train"],
        },
