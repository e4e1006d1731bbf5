"""Where a run's time went, per rule, from the benchmark files every job writes
(results/benchmarks/<rule>/...tsv: Snakemake's `benchmark:` directive, wall `s` and `cpu_time`
of the job's script).

    .venv/bin/python benchmarks/rule_times.py results                     # one run
    .venv/bin/python benchmarks/rule_times.py BEFORE/results results      # two, side by side

Prints a Markdown table: per rule the jobs, their summed wall and CPU seconds and the mean wall
seconds of one job; with two runs, both and the change. Only the jobs' own time is counted:
Snakemake's scheduling, and the waiting of a job for a free core, are not in these files (the
run's wall time is).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def rule_times(results: str | Path) -> dict[str, tuple[int, float, float]]:
    """rule -> (jobs, summed wall seconds, summed CPU seconds) of the benchmark files under
    ``results``/benchmarks."""
    totals: dict[str, list[float]] = {}
    root = Path(results) / "benchmarks"
    for path in sorted(root.rglob("*.tsv")):
        rule = path.relative_to(root).parts[0]
        with path.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                jobs, wall, cpu = totals.setdefault(rule, [0, 0.0, 0.0])
                totals[rule] = [jobs + 1, wall + float(row["s"]), cpu + float(row.get("cpu_time") or 0.0)]
    return {rule: (int(j), w, c) for rule, (j, w, c) in totals.items()}


def table(runs: list[dict[str, tuple[int, float, float]]], names: list[str]) -> str:
    rules = sorted({r for run in runs for r in run}, key=lambda r: -max(run.get(r, (0, 0.0, 0.0))[1] for run in runs))
    header = "| rule | " + " | ".join(f"{n}: jobs, wall s (CPU s), s/job" for n in names)
    header += " | change |" if len(runs) == 2 else " |"
    lines = [header, "|---" * (len(runs) + 1 + (len(runs) == 2)) + "|"]
    for rule in rules + ["all jobs"]:
        cells, walls = [], []
        for run in runs:
            jobs, wall, cpu = (sum(v[0] for v in run.values()), sum(v[1] for v in run.values()),
                               sum(v[2] for v in run.values())) if rule == "all jobs" else run.get(rule, (0, 0.0, 0.0))
            walls.append(wall)
            cells.append(f"{jobs}, {wall:.0f} ({cpu:.0f}), {wall / jobs:.1f}" if jobs else "-")
        change = [f"{walls[1] - walls[0]:+.0f} s"] if len(runs) == 2 else []
        lines.append(f"| {rule} | " + " | ".join(cells + change) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="one or two results folders (before, after)")
    args = parser.parse_args(argv)
    if len(args.results) > 2:
        parser.error("give one results folder, or two to compare")
    print(table([rule_times(r) for r in args.results], [Path(r).resolve().parent.name for r in args.results]))


if __name__ == "__main__":
    main()
