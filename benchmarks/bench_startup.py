"""Benchmark the start-up of a workflow job: the imports an evaluation job pays before any work.

Every model job of the workflow is a fresh interpreter that imports torch, a transformers
model class and (for evaluation) lm-eval's HFLM. transformers pulls in scikit-learn, SciPy and
`kernels` with its model classes when they are installed, for assisted decoding, object-detection
losses and hub kernels; ``mathneuro.models.lean_transformers`` turns those three flags off first. This script
times both ways in fresh interpreters, interleaved (the order alternates every repeat), and
prints the medians and their ratio:

    (a) plain: import the model class and HFLM as transformers does by default
    (b) lean:  lean_transformers() first, then the same imports
    (c) lean, then ``mathneuro.logs.end_job()``: as every workflow script ends, without the
        interpreter's teardown of those modules (which (a) and (b) pay at their exit)

Each time is the whole process, from start to exit, as a job pays it.

Run from the repository root:  .venv/bin/python benchmarks/bench_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

IMPORTS = (
    "from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM\n"
    "from lm_eval.models.huggingface import HFLM\n"
    "import lm_eval.evaluator\n"
    "import sys\n"
    "print(json.dumps(sorted(m for m in ('sklearn', 'scipy', 'kernels') if m in sys.modules)))\n"
)
JOBS = {
    "plain": "import json\n" + IMPORTS,
    "lean": "import json\nfrom mathneuro.models import lean_transformers\nlean_transformers()\n" + IMPORTS,
}
JOBS["lean, end_job"] = JOBS["lean"] + "from mathneuro.logs import end_job\nend_job()\n"


def run(code: str) -> tuple[float, list[str]]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="save every time to this file")
    args = parser.parse_args()
    run(JOBS["plain"])  # warm the file cache: every timed run reads the same files
    times: dict[str, list[float]] = {name: [] for name in JOBS}
    loaded: dict[str, list[str]] = {}
    for repeat in range(args.repeats):
        order = list(JOBS) if repeat % 2 == 0 else list(reversed(JOBS))
        for name in order:
            seconds, loaded[name] = run(JOBS[name])
            times[name].append(seconds)
    median = {name: statistics.median(t) for name, t in times.items()}
    for name in JOBS:
        print(f"({name}) {median[name]:.2f} s median of {args.repeats}; sklearn/scipy/kernels imported: {loaded[name] or 'none'}")
    print(f"lean/plain = {median['lean'] / median['plain']:.2f}; saved {median['plain'] - median['lean']:.2f} s per job")
    ended = median["lean, end_job"]
    print(f"(lean, end_job)/lean = {ended / median['lean']:.2f}; saved {median['lean'] - ended:.2f} s per job; "
          f"against plain {ended / median['plain']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"times": times, "median": median, "loaded": loaded}, f, indent=1)


if __name__ == "__main__":
    main()
