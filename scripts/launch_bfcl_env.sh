#!/usr/bin/env bash
# Start the BFCL environment server (BFCL's multi-turn API simulators and checker, in .venv-bfcl), wait until
# /health answers, then either run a command while it is up (the server stops when the command ends) or keep
# serving until Ctrl-C.
#
#   bash scripts/launch_bfcl_env.sh                                    # serve until Ctrl-C
#   bash scripts/launch_bfcl_env.sh bash recipes/<stage>.sh            # serve around a job (it reads BFCL_ENV_URL)
#
# Needs .venv-bfcl: make bfcl-venv. Hardware: CPU only. Limits (--max-sessions, --idle-timeout-s, ...) go through
# EXTRA_ARGS; any HOST other than 127.0.0.1 needs AGENTIC_VERL_BFCL_ENV_TOKEN (docs/bfcl_env.md).
set -euo pipefail

HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8090}
HEALTH_TIMEOUT_S=${HEALTH_TIMEOUT_S:-60}
LOG_FILE=${LOG_FILE:-bfcl_env_server.log}
EXTRA_ARGS=${EXTRA_ARGS:-}               # e.g. "--max-sessions 8192 --idle-timeout-s 1800"
AGENTIC_VERL=${AGENTIC_VERL:-agentic-verl}

source "$(dirname "${BASH_SOURCE[0]}")/serve_around.sh"   # serve_around

# shellcheck disable=SC2086  # EXTRA_ARGS is a list of words on purpose
"$AGENTIC_VERL" serve bfcl-env --host "$HOST" --port "$PORT" $EXTRA_ARGS >"$LOG_FILE" 2>&1 &
serve_around $! "BFCL environment server" BFCL_ENV_URL "$@"
