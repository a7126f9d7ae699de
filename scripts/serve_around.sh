# shellcheck shell=bash
# Sourced by scripts/launch_*.sh after they start a server in the background: serve_around stops it when the
# launcher exits, waits until http://$HOST:$PORT/health answers (HEALTH_TIMEOUT_S; LOG_FILE's last lines if not),
# exports the URL, then runs the launcher's command while the server is up, or waits on the server until Ctrl-C.
source "$(dirname "${BASH_SOURCE[0]}")/../recipes/_common/net.sh"   # wait_for_health

_stop_served() {
    if kill -0 "$served_pid" 2>/dev/null; then
        kill -TERM "$served_pid"   # graceful: the server finishes in-flight requests and stops what it started
        wait "$served_pid" 2>/dev/null || true
    fi
}

# serve_around PID WHAT URL_VARIABLE [COMMAND...]
serve_around() {
    served_pid=$1
    local what=$2 url_variable=$3
    shift 3
    trap _stop_served EXIT
    local url="http://$HOST:$PORT"
    if ! wait_for_health "$url" "$HEALTH_TIMEOUT_S" "$served_pid" "$LOG_FILE"; then
        echo "$(basename "$0"): the $what did not come up" >&2
        exit 1
    fi
    echo "$what ready on $url (pid $served_pid, log $LOG_FILE)"
    export "$url_variable=$url"
    if (($# > 0)); then
        "$@"
    else
        wait "$served_pid"
    fi
}
