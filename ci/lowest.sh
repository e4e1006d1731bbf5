#!/usr/bin/env bash
# The statistics, table and figure libraries at the lowest versions pyproject.toml allows, and
# their unit tests run against them, so that the declared lower bounds are tested ones. The pins
# are read from pyproject.toml's ">=" bounds; the libraries are installed apart (a pip --target
# folder put first on PYTHONPATH) and .venv is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
libraries="numpy scipy statsmodels pandas pyarrow matplotlib"
tests="tests/test_stats.py tests/test_evidence.py tests/test_summary.py tests/test_plots.py tests/test_overlap.py"
pins=$(.venv/bin/python - $libraries <<'PY'
import sys, tomllib
from packaging.requirements import Requirement

with open("pyproject.toml", "rb") as f:
    declared = {Requirement(r).name.lower(): Requirement(r) for r in tomllib.load(f)["project"]["dependencies"]}
for name in sys.argv[1:]:
    (low,) = [s.version for s in declared[name].specifier if s.operator == ">="]
    print(f"{name}=={low}")
PY
)
echo "lowest allowed: $(echo $pins)"
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
echo "$pins" > "$target/constraints.txt"
# shellcheck disable=SC2086
.venv/bin/pip install --quiet --target "$target/site" -c "$target/constraints.txt" $pins
# shellcheck disable=SC2086
PYTHONPATH="$target/site" .venv/bin/python - $pins <<'PY'
import sys
from importlib.metadata import version
from packaging.version import Version
wrong = [pin for pin in sys.argv[1:] if Version(version(pin.split("==")[0])) != Version(pin.split("==")[1])]
assert not wrong, f"not the versions under test: {wrong}"
PY
# shellcheck disable=SC2086
PYTHONPATH="$target/site" .venv/bin/pytest -q -p no:cacheprovider -m "not workflow and not slow and not slurm" $tests
