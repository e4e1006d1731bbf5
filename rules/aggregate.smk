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
        selections={analysis: analysis_axes(analysis) for analysis in EDIT_ANALYSES},
        skill_tasks=SKILL_TASKS,
        top_k_set={"skill": SKILL, "method": TOP_K_METHOD},
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
                labels={"study": STUDY, "item": f"figure: {f}"},
            )
            for f, t in FIGURES.items()
        ],
        summaries=[
            report(
                plot_path(t, "html"),
                caption=f"../report/{t}.rst",
                category=REPORT_CATEGORIES[t],
                labels={"study": STUDY, "item": "summary table"},
            )
            for t in TABLES
        ],
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
