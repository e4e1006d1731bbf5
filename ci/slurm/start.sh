#!/usr/bin/env bash
# Start a throw-away single-node Slurm cluster (munged + slurmctld + slurmd) on
# this machine, for the `pytest -m slurm` test. Debian/Ubuntu packages, Slurm
# 22.05, run as root, no systemd needed.
#
# Usage:  ci/slurm/start.sh [STATE_DIR]
#   STATE_DIR  empty or new folder for every config, key, socket, spool, pid and
#              log file (default: a fresh `mktemp -d`). The only thing written
#              outside it is the symlink /run/slurm/conf -> STATE_DIR/etc (see
#              below); /etc/slurm and /etc/munge are left alone. One cluster
#              at a time per machine (fixed ports, one /run/slurm/conf).
#
# Prerequisite (as root):
#   apt-get install -y slurmctld slurmd slurm-client munge
#
# On success it prints `export ...` lines and writes them to STATE_DIR/env:
#   SLURM_CONF     the generated slurm.conf (every Slurm command reads it)
#   SLURM_CI_DIR   STATE_DIR, to give to ci/slurm/stop.sh
# so that a caller can do:  source "$STATE_DIR/env"
# It returns only once `sinfo` reports the node idle (or fails after a timeout).
#
# Environment knobs (all optional):
#   SLURM_CI_CTLD_PORT / SLURM_CI_SLURMD_PORT  ports (default 6817 / 6818)
#   SLURM_CI_TIMEOUT    seconds to wait for each daemon / the idle node (60)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
timeout_s="${SLURM_CI_TIMEOUT:-60}"

die() { echo "ci/slurm/start.sh: error: $*" >&2; exit 1; }
log() { echo "ci/slurm/start.sh: $*" >&2; }

# --- preconditions ------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || die "must run as root (daemons switch users and bind ports)"
for cmd in munged slurmctld slurmd sinfo scontrol; do
    command -v "$cmd" >/dev/null 2>&1 \
        || die "'$cmd' not found; install: apt-get install -y slurmctld slurmd slurm-client munge"
done
id munge >/dev/null 2>&1 || die "user 'munge' missing (is the munge package installed?)"

# Slurm commands run *inside* jobs cannot rely on $SLURM_CONF: the Snakemake
# job-step plugin strips every SLURM_* variable before its nested `srun`. Those
# commands then look for /etc/slurm/slurm.conf and, failing that, for
# /run/slurm/conf/slurm.conf (where a "configless" slurmd keeps its copy). We
# use the latter, as a symlink to our etc/ folder: /run is volatile and
# /etc/slurm stays untouched. stop.sh removes the link again.
run_conf=/run/slurm/conf
if [[ -e /etc/slurm/slurm.conf ]]; then
    die "/etc/slurm/slurm.conf exists: this machine already has a Slurm configuration, and Slurm commands inside jobs would use it instead of ours"
fi
if [[ -L "$run_conf" ]]; then
    # A link left by an earlier run is fine to replace if its cluster is gone.
    old_dir="$(dirname "$(readlink "$run_conf")")"
    if [[ -s "$old_dir/run/slurmctld.pid" ]] && kill -0 "$(cat "$old_dir/run/slurmctld.pid")" 2>/dev/null; then
        die "another CI cluster is running (state in $old_dir); stop it first: $here/stop.sh $old_dir"
    fi
elif [[ -e "$run_conf" ]]; then
    die "$run_conf exists and is not our symlink (a configless slurmd?); refusing to replace it"
fi

state="${1:-$(mktemp -d -t slurm-ci.XXXXXX)}"
mkdir -p "$state"
state="$(cd "$state" && pwd)"
if [[ -s "$state/run/slurmctld.pid" ]] && kill -0 "$(cat "$state/run/slurmctld.pid")" 2>/dev/null; then
    die "$state already holds a cluster; stop it first: ci/slurm/stop.sh $state"
fi
# munged (user munge) must be able to traverse the state folder.
chmod 0755 "$state"
mkdir -p "$state/etc" "$state/ctld" "$state/slurmd" "$state/run" "$state/log" "$state/munge"

# Show the relevant logs if we fail (die or a failed command) after this point.
on_error() {
    local rc=$1
    log "failed (exit $rc); last lines of the logs in $state/log and $state/munge:"
    for f in "$state"/munge/munged.log "$state"/log/*.log; do
        [[ -f "$f" ]] && { echo "----- $f" >&2; tail -n 20 "$f" >&2; }
    done
    log "stop what did start with: $here/stop.sh $state"
}
trap 'rc=$?; ((rc == 0)) || on_error "$rc"' EXIT

# Poll CMD (a shell snippet) every 0.2 s until it succeeds or $timeout_s pass.
wait_for() {
    local what="$1" cmd="$2" deadline=$((SECONDS + timeout_s))
    until eval "$cmd" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || { log "timed out after ${timeout_s}s waiting for $what"; return 1; }
        sleep 0.2
    done
}

# --- munge: our own key, socket and daemon ----------------------------------
# munged insists that its key/pid/log/seed files belong to it and that their
# folders are not writable by others.
munge_dir="$state/munge"
munge_socket="$munge_dir/munge.socket"
chown munge:munge "$munge_dir"
chmod 0755 "$munge_dir"
if [[ ! -s "$munge_dir/munge.key" ]]; then
    (umask 077 && dd if=/dev/urandom of="$munge_dir/munge.key" bs=1024 count=1 status=none)
fi
chown munge:munge "$munge_dir/munge.key"
chmod 0400 "$munge_dir/munge.key"
log "starting munged"
# runuser (util-linux) drops to user munge; munged forks into the background.
runuser -u munge -- munged \
    --socket="$munge_socket" \
    --key-file="$munge_dir/munge.key" \
    --pid-file="$munge_dir/munged.pid" \
    --log-file="$munge_dir/munged.log" \
    --seed-file="$munge_dir/munged.seed"
# It is ready once it answers a credential round trip.
wait_for "munged" "munge --socket='$munge_socket' -n </dev/null | unmunge --socket='$munge_socket'"

# --- Slurm configuration --------------------------------------------------------
cpus="$(nproc)"
# 80 % of physical memory, in MiB: slurmd refuses a node configured with more
# memory than it finds.
real_memory="$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)"
fill() {
    sed -e "s|@STATE_DIR@|$state|g" \
        -e "s|@MUNGE_SOCKET@|$munge_socket|g" \
        -e "s|@CPUS@|$cpus|g" \
        -e "s|@REAL_MEMORY@|$real_memory|g" \
        -e "s|@CTLD_PORT@|${SLURM_CI_CTLD_PORT:-6817}|g" \
        -e "s|@SLURMD_PORT@|${SLURM_CI_SLURMD_PORT:-6818}|g" \
        "$1" >"$2"
    if grep -n '^[^#]*@[A-Z_]*@' "$2" >&2; then die "unfilled placeholder in $2"; fi
}
fill "$here/slurm.conf.in" "$state/etc/slurm.conf"
# slurmctld/slurmd look for gres.conf next to slurm.conf.
fill "$here/gres.conf.in" "$state/etc/gres.conf"
export SLURM_CONF="$state/etc/slurm.conf"
# See the /run/slurm/conf note at the top.
mkdir -p "$(dirname "$run_conf")"
ln -sfn "$state/etc" "$run_conf"

# --- daemons --------------------------------------------------------------------
# Both fork into the background and write the pid file named in slurm.conf.
log "starting slurmctld"
slurmctld -f "$SLURM_CONF"
wait_for "slurmctld" "scontrol ping | grep -q UP"

log "starting slurmd (node name localhost)"
slurmd -f "$SLURM_CONF" -N localhost
wait_for "node localhost to become idle" \
    "[[ \"\$(sinfo --noheader --nodes=localhost --format=%T)\" == idle ]]"

# --- hand over to the caller ----------------------------------------------------
cat >"$state/env" <<EOF
export SLURM_CONF=$SLURM_CONF
export SLURM_CI_DIR=$state
EOF
trap - EXIT
log "cluster ready ($cpus CPUs, ${real_memory} MiB, 2 GPUs) in ${SECONDS}s; state in $state"
sinfo >&2
cat "$state/env"
