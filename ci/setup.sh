#!/usr/bin/env bash
# Create .venv with the CPU build of PyTorch and the project (editable) with its workflow and dev extras.
# PyTorch goes first, pinned: an unpinned `torch` would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet "torch==${MATHNEURO_TORCH:-2.13.0}"
.venv/bin/pip install --quiet -e ".[workflow,dev]"
# `snakemake --profile slurm` by its bare name (never replaces a profile of that name).
bash ci/install_profile.sh
