#!/usr/bin/env bash
# Make `snakemake --profile slurm` (the bare name) find this repository's profiles/slurm.
# Snakemake looks for a bare profile name in ./slurm and in its user and site config folders;
# this links the user one (e.g. ~/.config/snakemake/slurm) to profiles/slurm. An existing profile
# of that name is never replaced: it is left as it is, and said so.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$PWD/profiles/slurm"
folder=$(.venv/bin/python -c "from snakemake.common import get_appdirs; print(get_appdirs().user_config_dir)")
link="$folder/slurm"
mkdir -p "$folder"
if [[ -L "$link" && "$(readlink -f "$link")" == "$(readlink -f "$target")" ]]; then
  echo "profile 'slurm': $link already points to $target"
elif [[ -e "$link" || -L "$link" ]]; then
  echo "profile 'slurm': $link exists and is not this repository's; left as it is." \
    "Use --profile $target, or remove $link and rerun $0." >&2
else
  ln -s "$target" "$link"
  echo "profile 'slurm': linked $link -> $target (snakemake --profile slurm)"
fi
