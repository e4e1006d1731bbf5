#!/usr/bin/env bash
# Stop the single-node CI cluster started by ci/slurm/start.sh.
#
# Usage:  ci/slurm/stop.sh [STATE_DIR]     (default: $SLURM_CI_DIR)
#
# Cancels any job still queued or running, then stops slurmd, slurmctld and
# munged, each by the pid in its pid file under STATE_DIR (never by name, so
# other Slurm/munge daemons on the machine are untouched): SIGTERM, wait, and
# SIGKILL after SLURM_CI_TIMEOUT seconds (default 20). Safe to call twice and
# on a half-started cluster. The state folder itself is kept (logs); remove it
# yourself if you like.
set -euo pipefail

log() { echo "ci/slurm/stop.sh: $*" >&2; }

state="${1:-${SLURM_CI_DIR:-}}"
[[ -n "$state" ]] || { log "error: give the state folder (argument or \$SLURM_CI_DIR)"; exit 2; }
[[ -d "$state" ]] || { log "error: no such folder: $state"; exit 2; }
timeout_s="${SLURM_CI_TIMEOUT:-20}"
rc=0

# Cancel leftover jobs first, so no job step outlives its slurmd. Best effort:
# the controller may already be gone.
if [[ -f "$state/etc/slurm.conf" && -f "$state/run/slurmctld.pid" ]]; then
    export SLURM_CONF="$state/etc/slurm.conf"
    if timeout 10 scancel --full --user=root >/dev/null 2>&1; then
        deadline=$((SECONDS + timeout_s))
        while [[ -n "$(timeout 10 squeue --noheader --states=PENDING,RUNNING,COMPLETING 2>/dev/null)" ]] \
            && ((SECONDS < deadline)); do
            sleep 0.2
        done
    fi
fi

# stop_by_pidfile NAME PIDFILE: TERM, wait up to $timeout_s, then KILL.
stop_by_pidfile() {
    local name="$1" pidfile="$2" pid deadline
    [[ -s "$pidfile" ]] || { log "$name: no pid file ($pidfile), skipping"; return 0; }
    pid="$(tr -dc '0-9' <"$pidfile")"
    if [[ -z "$pid" ]] || ! kill -0 "$pid" 2>/dev/null; then
        log "$name: not running (stale pid file)"
        rm -f "$pidfile"
        return 0
    fi
    log "$name: stopping pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + timeout_s))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            log "$name: still alive after ${timeout_s}s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            rc=1
            break
        fi
        sleep 0.1
    done
    rm -f "$pidfile"
}

# Reverse start order: compute node, controller, then authentication.
stop_by_pidfile slurmd "$state/run/slurmd.pid"
stop_by_pidfile slurmctld "$state/run/slurmctld.pid"
stop_by_pidfile munged "$state/munge/munged.pid"
# start.sh linked /run/slurm/conf to our etc/ folder; remove it only if it
# still points at this cluster.
if [[ -L /run/slurm/conf && "$(readlink /run/slurm/conf)" == "$state/etc" ]]; then
    rm -f /run/slurm/conf
    rmdir /run/slurm 2>/dev/null || true # only if nothing else is in it
fi
log "done (logs kept in $state)"
exit "$rc"
