#!/usr/bin/env bash
# The workflow on a real single-node Slurm: Debian packages, daemons started by hand (no systemd),
# all traffic on loopback. Needs root; MATHNEURO_SKIP_SLURM=1 skips it.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ "${MATHNEURO_SKIP_SLURM:-0}" == 1 ]]; then
  echo "MATHNEURO_SKIP_SLURM=1: Slurm test skipped"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! command -v slurmctld >/dev/null; then
  apt-get update -qq && apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi
state=$(mktemp -d /tmp/slurm-ci.XXXXXX)
trap 'bash ci/slurm/stop.sh "$state"' EXIT
bash ci/slurm/start.sh "$state"
# shellcheck disable=SC1091
source "$state/env"
MATHNEURO_REQUIRE_SLURM=1 .venv/bin/pytest -m slurm
