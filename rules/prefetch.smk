"""Run on a login node with internet: fill the Hugging Face cache for offline compute nodes."""

from mathneuro.tasks import local_only_data


localrules:
    prefetch,


rule prefetch:
    output:
        touch(f"{RESULTS}/prefetch.done"),
    log:
        "logs/prefetch.log",
    benchmark:
        f"{RESULTS}/benchmarks/prefetch.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        **study.prefetch(),
        code=code("prefetch.py"),
    script:
        "../workflow_scripts/prefetch.py"
