# shellcheck shell=bash
# Sourced by scripts that start a local server (recipes/demo/run.sh, scripts/launch_retrieval_server.sh); the Python
# twins are agentic_verl/net.py's free_port and wait_for_health.
#
#   free_port                          print a TCP port nothing listens on at 127.0.0.1 (the OS picks it)
#   wait_for_health URL TIMEOUT_S PID LOG
#                                      return once URL/health answers 200; return 1 with a message on stderr when
#                                      the server (PID) exits first (the LOG's last 20 lines follow) or TIMEOUT_S passes

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for_health() {
    local url=$1 timeout_s=$2 pid=$3 log=$4
    local deadline=$((SECONDS + timeout_s))
    # --noproxy: the server is ours, on this machine; an http_proxy from the environment must not sit in between
    until curl -sf --noproxy '*' --max-time 5 "$url/health" >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "the server (pid $pid) exited before $url/health answered; last lines of $log:" >&2
            tail -n 20 "$log" >&2
            return 1
        fi
        if ((SECONDS >= deadline)); then
            echo "no /health on $url after ${timeout_s}s (log: $log)" >&2
            return 1
        fi
        sleep 0.2
    done
}
