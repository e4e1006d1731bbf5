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
            {"path": m["path"], "revision": m.get("revision")}
            for m in config["models"].values()
            if m["path"] != "toy"
        ],
        datasets=[
            {k: v for k, v in spec.items() if k in ("path", "name")}
            for spec in config["datasets"].values()
            if spec["source"] == "hf"
        ],
        tasks=[
            t
            for s in EVAL["suites"].values()
            for t in s["tasks"]
            if not t.startswith("toy_")
        ],
        include_path=EVAL.get("include_path"),
    script:
        "../workflow_scripts/prefetch.py"
