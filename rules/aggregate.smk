"""Stage 4: the paper's tables (tidy Parquet) and their plots."""


localrules:
    aggregate,
    plots,


rule aggregate:
    input:
        evaluations=[f for m in config["models"] for f in evaluation_files(m)],
        counts=[f for m in config["models"] for f in counts_files(m)],
        consistency=[f for m in config["models"] for f in consistency_files(m)],
    output:
        tables=[f"{R}/tables/{t}.parquet" for t in TABLES],
        summaries=[f"{R}/tables/{t}_summary.parquet" for t in TABLES],
    log:
        "logs/aggregate.log",
    benchmark:
        f"{R}/benchmarks/aggregate.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        pruning_edit=config["pruning"]["edit"],
        scaling_edits=config["scaling"]["edits"],
        n_samples=N_MAIN,
    script:
        "../workflow_scripts/aggregate.py"


rule plots:
    input:
        [f"{R}/tables/{t}.parquet" for t in TABLES],
    output:
        [f"{R}/tables/plots/{t}.png" for t in TABLES],
    log:
        "logs/plots.log",
    benchmark:
        f"{R}/benchmarks/plots.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../workflow_scripts/plots.py"
