"""Fine-tuning edits (mathneuro.finetune): train a set's entries alone, or every parameter (the
reference), on a data set's texts; what a run trained is kept (a set's trained values: a sparse
delta beside the set; every parameter: a checkpoint's weights), so adding an evaluation never
retrains. Their evaluations are rule evaluate's, with the trained weights put in."""


rule finetune:
    """One set's run: its entries trained (train: set), or every parameter after the set's start
    edit (train: all, with start)."""
    input:
        model=model_input,
        mask=lambda wc: mask_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k
        ),
        data=finetune_data,
    output:
        trained_path(
            "{model}",
            "{skill}",
            "{method}",
            "{control}",
            "{n}",
            "{seed}",
            "{k}",
            "{edit}",
        ),
    log:
        "logs/finetune/{model}/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}/{edit}.log",
    benchmark:
        f"{RESULTS}/benchmarks/finetune/{{model}}/{{skill}}/{{method}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}/{{edit}}.tsv"
    wildcard_constraints:
        edit=edits_constraint(study.finetune_edits(per_set=True)),
    conda:
        "../envs/mathneuro.yaml"
    threads: model_threads
    resources:
        gpu=gpus,
        mem_mb=mem_mb(16000),  # weights, gradients and the optimizer's two moments: 16 bytes a parameter
        runtime=runtime_min(60),
    params:
        code=code("finetune.py"),
        content=content(model_paths, finetune_data_paths),
        model=model_params,
        run=finetune_params,
    script:
        "../workflow_scripts/finetune.py"


use rule finetune as finetune_unedited with:
    input:
        model=model_input,
        data=finetune_data,
    output:
        unedited_trained_path("{model}", "{skill}", "{seed}", "{edit}"),
    log:
        "logs/finetune/{model}/{skill}/all/seed{seed}/{edit}.log",
    benchmark:
        f"{RESULTS}/benchmarks/finetune/{{model}}/{{skill}}/all/seed{{seed}}/{{edit}}.tsv"
    wildcard_constraints:
        edit=edits_constraint(study.finetune_edits(per_set=False)),
