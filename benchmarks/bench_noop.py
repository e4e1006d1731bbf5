"""How long `snakemake -n` takes to say "nothing to be done" after a finished paper study.

A study of the paper's size is over a thousand jobs (about 1,400 per model); Snakemake builds
the whole DAG and checks every file before it can say that nothing needs to run. This script
fakes a finished run of each given config (every output created in DAG order and recorded with
`--touch`, as tests/dag.py does) in a temporary folder, then times the dry run (median of 3).

Run from the repository root:
    .venv/bin/python benchmarks/bench_noop.py [configs/models/llama-3.2-1b-it.yaml ...]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from dag import fake_finished_run, planned  # noqa: E402  (tests/dag.py)


def main(configs: list[str]) -> None:
    for name in configs or ["configs/models/llama-3.2-1b-it.yaml", "configs/models/all.yaml"]:
        configfile = (REPO / name).resolve()
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            jobs = fake_finished_run(Path(tmp), configfile)
            faked = time.perf_counter() - start
            times = []
            for _ in range(3):
                start = time.perf_counter()
                assert planned(Path(tmp), configfile) == [], "the faked run is not finished"
                times.append(time.perf_counter() - start)
        print(f"{name}: {len(jobs)} jobs; no-op dry run {statistics.median(times):.1f} s "
              f"(runs: {', '.join(f'{t:.1f}' for t in times)}); faking the finished run took {faked:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
