# shellcheck shell=bash
# Sourced by recipes/_common/device.sh (every recipe, on any device) and demo.sh. `kill $$` (SIGTERM to a recipe's shell, as a scheduler or a user
# sends it) ends bash and runs its EXIT trap at once, but the command bash was waiting for (main_ppo, torchrun, an
# eval) keeps running, orphaned. The traps call kill_descendants first, so an interrupted run stops what it started.
#
#   kill_descendants PID   SIGTERM every process below PID (children first collected, then signalled), SIGKILL
#                          what is still alive 5 s later

_descendants() { # _descendants PID: the PIDs below PID, depth first
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        echo "$child"
        _descendants "$child"
    done
    return 0
}

# Written for `set -e` callers (the recipes): no command here may fail, or the trap would change the exit code.
kill_descendants() {
    local pids alive pid i
    pids=$(_descendants "$1") || true
    [[ -n "$pids" ]] || return 0
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for i in 1 2 3 4 5 6 7 8 9 10; do
        alive=""
        for pid in $pids; do
            if kill -0 "$pid" 2>/dev/null; then alive+=" $pid"; fi
        done
        [[ -n "$alive" ]] || return 0
        pids=$alive
        sleep 0.5
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    return 0
}
