"""Models the workflow builds: `toy` (the shipped toy where the config's recipe made it, else
trained on the synthetic tasks), `planted` (a toy without a skill, the skill then trained into a
known set of its entries), `random` (random weights of a given architecture, with a tokenizer
trained on the identification texts) and a GGUF file dequantized; and, on request, an edited model
exported as a checkpoint."""


rule shipped_toy_model:
    """The toy the repository ships (mathneuro/toy_model), copied when the config's recipe made
    it, once the train files are checked to be those it read (mathneuro.shipped_toy)."""
    input:
        train=toy_train_files,
        shipped=by_content(shipped_toy_folder),
    output:
        directory(f"{RESULTS}/models/{{model}}"),
    log:
        "logs/shipped_toy_model/{model}.log",
    benchmark:
        f"{RESULTS}/benchmarks/shipped_toy_model/{{model}}.tsv"
    wildcard_constraints:
        model=toy_models(shipped=True),
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=1000,
        runtime=5,
    params:
        code=code("shipped_toy_model.py"),
        tasks=study.data.synthetic_tasks(trained=True),
    script:
        "../workflow_scripts/shipped_toy_model.py"


rule train_toy_model:
    input:
        train=toy_train_files,
    output:
        directory(f"{RESULTS}/models/{{model}}"),
    log:
        "logs/train_toy_model/{model}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train_toy_model/{{model}}.tsv"
    wildcard_constraints:
        model=toy_models(shipped=False),
    conda:
        "../envs/mathneuro.yaml"
    threads: 2  # nothing else can run yet: 1.47x one thread's speed on a quiet 2-core machine (benchmarks/README.md)
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=30,
    params:
        code=code("train_toy_model.py"),
        tasks=study.data.synthetic_tasks(trained=True),
        hyperparameters=canonical(config["toy_model"]),
    script:
        "../workflow_scripts/train_toy_model.py"


use rule train_toy_model as train_plant_base with:
    output:
        directory(f"{RESULTS}/bases/{{base}}"),
    log:
        "logs/train_plant_base/{base}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train_plant_base/{{base}}.tsv"
    wildcard_constraints:
        base=plant_bases(),
    params:
        code=code("train_toy_model.py"),
        tasks=study.data.synthetic_tasks(trained=True),
        hyperparameters=lambda wc: study.plant_bases()[wc.base],


rule plant_model:
    """A planted model (mathneuro.plant): a set S of its base toy's block matrices drawn, and the
    skill trained into S alone; the model and S saved."""
    input:
        base=lambda wc: f"{RESULTS}/bases/{study.plant_base(wc.model)}",
        data=by_content(plant_data_paths),
    output:
        model=directory(f"{RESULTS}/models/{{model}}"),
        truth=truth_path("{model}"),
    log:
        "logs/plant_model/{model}.log",
    benchmark:
        f"{RESULTS}/benchmarks/plant_model/{{model}}.tsv"
    wildcard_constraints:
        model=models_built_as("planted"),
    conda:
        "../envs/mathneuro.yaml"
    threads: 2
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=30,
    params:
        code=code("plant_model.py"),
        content=content(plant_data_paths),
        plant=lambda wc: canonical(study.models[wc.model]["plant"]),
        texts=lambda wc: study.planting_texts(wc.model),
        local_data=lambda wc: {
            d: study.data.local_data_of(d) for d in study.planting_data(wc.model)
        },
        targets=study.targets,
    script:
        "../workflow_scripts/plant_model.py"


rule random_model:
    input:
        data=by_content(random_model_data),
    output:
        directory(f"{RESULTS}/models/{{model}}"),
    log:
        "logs/random_model/{model}.log",
    benchmark:
        f"{RESULTS}/benchmarks/random_model/{{model}}.tsv"
    wildcard_constraints:
        model=models_built_as("random"),
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=weights_job_mem_mb,
        runtime=30,
    params:
        code=code("random_model.py"),
        content=content(random_model_data),
        architecture=lambda wc: canonical(study.models[wc.model]["architecture"]),
        specs={d: canonical(config["datasets"][d]) for d in study.datasets},
        local_data=study.data.local_data,
    script:
        "../workflow_scripts/random_model.py"


rule dequantize_gguf:
    """Once per model: its GGUF checkpoint dequantized into a Hugging Face folder (safetensors),
    which every later job reads as any local checkpoint."""
    input:
        gguf_file,
    output:
        directory(f"{RESULTS}/models/{{model}}"),
    log:
        "logs/dequantize_gguf/{model}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dequantize_gguf/{{model}}.tsv"
    wildcard_constraints:
        model=models_built_as("gguf"),
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(30),
    params:
        code=code("dequantize_gguf.py"),
        content=content(gguf_paths),
        path=lambda wc: study.models[wc.model]["path"],
        file=lambda wc: study.models[wc.model]["gguf"],
        revision=lambda wc: study.models[wc.model]["revision"],
    script:
        "../workflow_scripts/dequantize_gguf.py"


rule export_model:
    """On request only: the edited model as a Hugging Face checkpoint (safetensors)."""
    input:
        model=model_input,
        mask=lambda wc: mask_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k
        ),
    output:
        directory(
            f"{RESULTS}/{{model}}/export/{{skill}}/{{method}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}/{{edit}}"
        ),
    log:
        "logs/export_model/{model}/{skill}/{method}/{control}/n{n}/seed{seed}/k{k}/{edit}.log",
    benchmark:
        f"{RESULTS}/benchmarks/export_model/{{model}}/{{skill}}/{{method}}/{{control}}/n{{n}}/seed{{seed}}/k{{k}}/{{edit}}.tsv"
    wildcard_constraints:
        edit=edits_constraint(config["edits"]),
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=weights_job_mem_mb,
        runtime=runtime_min(10),
    params:
        code=code("export_model.py"),
        content=content(model_paths),
        model=model_params,
        factor=lambda wc: study.edits[wc.edit],
        trained=None,
    script:
        "../workflow_scripts/export_model.py"


use rule export_model as export_finetuned with:
    """On request only: a fine-tuning edit of a set as a checkpoint (what it trained put in)."""
    input:
        model=model_input,
        mask=lambda wc: mask_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k
        ),
        trained=lambda wc: trained_path(
            wc.model, wc.skill, wc.method, wc.control, wc.n, wc.seed, wc.k, wc.edit
        ),
    wildcard_constraints:
        edit=edits_constraint(study.finetune_edits(per_set=True)),
    params:  # merged into export_model's: these two replaced
        factor=None,
        trained=lambda wc: config["finetune"][wc.edit]["train"],


use rule export_model as export_finetuned_unedited with:
    """On request only: a fine-tuning run that needs no set (every parameter trained from the
    unedited model) as a checkpoint, one per repeat.
    """
    input:
        model=model_input,
        trained=lambda wc: unedited_trained_path(wc.model, wc.skill, wc.seed, wc.edit),
    output:
        directory(f"{RESULTS}/{{model}}/export/{{skill}}/all/seed{{seed}}/{{edit}}"),
    log:
        "logs/export_model/{model}/{skill}/all/seed{seed}/{edit}.log",
    benchmark:
        f"{RESULTS}/benchmarks/export_model/{{model}}/{{skill}}/all/seed{{seed}}/{{edit}}.tsv"
    wildcard_constraints:
        edit=edits_constraint(study.finetune_edits(per_set=False)),
    params:  # merged into export_model's: these two replaced
        factor=None,
        trained=lambda wc: config["finetune"][wc.edit]["train"],
