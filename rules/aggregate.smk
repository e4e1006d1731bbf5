"""Stage 4: the study's tables (tidy Parquet) and their plots, under results/tables/<study>/."""


localrules:
    aggregate,
    plots,


rule aggregate:
    input:
        evaluations=[f for m in config["models"] for f in evaluation_files(m)],
        samples=[f for m in config["models"] for f in evaluation_files(m, "samples")],
        base_results=[base_eval_path(m, s, "results") for m, s in base_evaluations()],
        counts=[f for m in config["models"] for f in counts_files(m)],
        consistency=[f for m in config["models"] for f in consistency_files(m)],
        layer_overlaps=[
            layer_overlap_path(f)
            for m in config["models"]
            for f in consistency_files(m)
        ],
        agreements=[f for m in config["models"] for f in agreement_files(m)],
        localizations=[f for m in config["models"] for f in localization_files(m)],
        subskill_overlaps=[
            f for m in config["models"] for f in subskill_overlap_files(m)
        ],
    output:
        tables=[table_path(t) for t in TABLES],
        summaries=[table_path(t, summary=True) for t in TABLES],
        samples=table_path("samples"),
    log:
        f"logs/aggregate/{study.name}.log",
    benchmark:
        f"{RESULTS}/benchmarks/aggregate/{study.name}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        **study.aggregate_params(),
        code=code("aggregate.py"),
        base_evaluations=base_evaluations(),  # (model, suite) of each base_results file
    script:
        "../workflow_scripts/aggregate.py"


rule plots:
    """The figures and their summary tables as HTML, both in the report (snakemake --report)."""
    input:
        tables=[table_path(t) for t in TABLES],
        summaries=[table_path(t, summary=True) for t in TABLES],
    output:
        figures=[
            report(
                plot_path(f),
                caption=f"../report/{f}.rst",
                category=REPORT_CATEGORIES[t],
                labels={"study": study.name, "item": f"figure: {f}"},
            )
            for f, t in FIGURES.items()
        ],
        summaries=[
            report(
                plot_path(t, "html"),
                caption=f"../report/{t}.rst",
                category=REPORT_CATEGORIES[t],
                labels={"study": study.name, "item": "summary table"},
            )
            for t in TABLES
        ],
    log:
        f"logs/plots/{study.name}.log",
    benchmark:
        f"{RESULTS}/benchmarks/plots/{study.name}.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=code("plots.py"),
    script:
        "../workflow_scripts/plots.py"
