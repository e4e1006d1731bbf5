"""Stage 4: the study's tables (tidy Parquet) and their plots, under results/tables/<study>/."""


localrules:
    aggregate,
    plots,


rule aggregate:
    input:
        evaluations=[f for m in config["models"] for f in evaluation_files(m)],
        samples=[f for m in config["models"] for f in evaluation_files(m, "samples")],
        counts=[f for m in config["models"] for f in counts_files(m)],
        consistency=[f for m in config["models"] for f in consistency_files(m)],
    output:
        tables=[table_path(t) for t in TABLES],
        summaries=[table_path(t, summary=True) for t in TABLES],
        samples=table_path("samples"),
    log:
        f"logs/aggregate/{STUDY}.log",
    benchmark:
        f"{R}/benchmarks/aggregate/{STUDY}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        pruning_edit=config["pruning"]["edit"],
        scaling_edits=config["scaling"]["edits"],
    script:
        "../workflow_scripts/aggregate.py"


rule plots:
    input:
        [table_path(t) for t in TABLES],
    output:
        [plot_path(t) for t in TABLES],
    log:
        f"logs/plots/{STUDY}.log",
    benchmark:
        f"{R}/benchmarks/plots/{STUDY}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../workflow_scripts/plots.py"
