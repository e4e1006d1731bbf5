"""How long `snakemake -n` takes to say "nothing to be done" after a finished paper study.

A study of the paper's size is over a thousand jobs (about 2,000 per model); Snakemake builds
the whole DAG and checks every file before it can say that nothing needs to run. This script
fakes a finished run of each given config (every output created in DAG order and recorded with
`--touch`, as tests/dag.py does) in a temporary folder, then times the dry run (median of 3).
With ``--against REV`` it does the same with the workflow and library of git revision REV (a
temporary worktree) side by side, and prints the ratio: what a change costs the no-op dry run.
The offline configs read a fake Hugging Face cache holding their hub models and data sets.

Run from the repository root:
    .venv/bin/python benchmarks/bench_noop.py [--against REV] [configs/models/llama-3.2-1b-it.yaml ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from dag import fake_finished_run, fake_hub_cache, planned  # noqa: E402  (tests/dag.py)


def noop_seconds(configfile: Path, repo: Path) -> tuple[int, list[float], float]:
    """(jobs, dry-run times, faking time) of a faked finished run of ``configfile`` on ``repo``'s code."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        jobs = fake_finished_run(Path(tmp), configfile, repo=repo)
        faked = time.perf_counter() - start
        times = []
        for _ in range(3):
            start = time.perf_counter()
            assert planned(Path(tmp), configfile, repo=repo) == [], "the faked run is not finished"
            times.append(time.perf_counter() - start)
    return len(jobs), times, faked


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", default=["configs/models/llama-3.2-1b-it.yaml", "configs/models/all.yaml"])
    parser.add_argument("--against", metavar="REV", help="also time the workflow of this git revision")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        configfiles = [(REPO / name).resolve() for name in args.configs]
        os.environ["HF_HUB_CACHE"] = str(fake_hub_cache(Path(scratch) / "hub", configfiles))
        checkouts = {"this checkout": REPO}
        if args.against:
            other = Path(scratch) / "against"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(other), args.against],
                           check=True, capture_output=True)
            checkouts[args.against] = other
        try:
            for configfile in configfiles:
                medians = {}
                for label, repo in checkouts.items():
                    jobs, times, faked = noop_seconds(configfile, repo)
                    medians[label] = statistics.median(times)
                    print(f"{configfile.relative_to(REPO)} [{label}]: {jobs} jobs; no-op dry run {medians[label]:.1f} s "
                          f"(runs: {', '.join(f'{t:.1f}' for t in times)}); faking the finished run took {faked:.0f} s")
                if args.against:
                    ratio = medians["this checkout"] / medians[args.against]
                    print(f"{configfile.relative_to(REPO)}: this checkout / {args.against} = {ratio:.2f}")
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(checkouts[args.against])],
                               capture_output=True)


if __name__ == "__main__":
    main(sys.argv[1:])
