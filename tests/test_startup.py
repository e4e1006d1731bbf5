"""What every Snakemake start-up pays: the workflow's parse (each dry run, and twice in each job a
cluster runs) imports none of the libraries that cost seconds to import; the jobs' scripts do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# (pandas is not among them: Snakemake imports it with its Slurm plugin, whatever the workflow)
HEAVY = ("torch", "transformers", "lm_eval", "datasets", "scipy")


def test_planning_the_default_study_imports_no_heavy_library(tmp_path):
    command = [sys.executable, "-X", "importtime", "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
               str(tmp_path), "--configfile", str(REPO / "config.yaml"), "-n", "--forceall", "-q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "mathneuro.study" in imported  # the workflow was parsed and planned
    assert not imported & set(HEAVY), f"the workflow's parse imports {sorted(imported & set(HEAVY))}"
