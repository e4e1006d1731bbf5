"""Run on a login node with internet: fill the Hugging Face cache for offline compute nodes."""


localrules:
    prefetch,


rule prefetch:
    output:
        touch(f"{R}/prefetch.done"),
    log:
        "logs/prefetch.log",
    benchmark:
        f"{R}/benchmarks/prefetch.tsv"
    conda:
        "../envs/mathneuro.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        models=[
            {"path": m["path"], "revision": m["revision"]}
            for label, m in config["models"].items()
            if not model_dir(label)
        ],
        datasets=[
            {k: v for k, v in spec.items() if k in ("path", "name", "revision")}
            for spec in (config["datasets"][d] for d in DATASETS)
            if spec["source"] == "hf" and local_key(spec["path"]) is None
        ],
        tasks=[
            t
            for s in EVAL["suites"].values()
            for t in s["tasks"]
            if not is_generated_task(t)
        ],
        include_path=EVAL["include_path"],
    script:
        "../workflow_scripts/prefetch.py"
