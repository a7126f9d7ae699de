#!/usr/bin/env bash
# Start the /retrieve server, wait until /health answers, then either run a command while it is up
# (the server stops when the command ends) or keep serving until Ctrl-C.
#
#   INDEX_DIR=data/wiki_bm25 bash scripts/launch_retrieval_server.sh                     # serve until Ctrl-C
#   INDEX_DIR=data/wiki_bm25 bash scripts/launch_retrieval_server.sh bash recipes/rag_r1/grpo.sh   # serve around a job
#
# Build an index first: agentic-verl index build --corpus corpus.jsonl --out "$INDEX_DIR"
# Hardware: CPU only. Other knobs (cache, limits, --record FILE / --replay FILE) go through EXTRA_ARGS.
set -euo pipefail

INDEX_DIR=${INDEX_DIR:-}                 # index folder (required unless EXTRA_ARGS has --replay FILE)
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
CACHE_SIZE=${CACHE_SIZE:-100000}
HEALTH_TIMEOUT_S=${HEALTH_TIMEOUT_S:-300}  # large indexes take a while to load
LOG_FILE=${LOG_FILE:-retrieval_server.log}
EXTRA_ARGS=${EXTRA_ARGS:-}               # e.g. "--record eval_cache.jsonl" or "--max-queries 4096"
AGENTIC_VERL=${AGENTIC_VERL:-agentic-verl}

source "$(dirname "${BASH_SOURCE[0]}")/serve_around.sh"   # serve_around

source_args=()
if [[ -n "$INDEX_DIR" ]]; then
    source_args=(--index "$INDEX_DIR")
elif [[ "$EXTRA_ARGS" != *--replay* ]]; then
    echo "launch_retrieval_server.sh: set INDEX_DIR (or EXTRA_ARGS=\"--replay FILE\")" >&2
    exit 2
fi

# shellcheck disable=SC2086  # EXTRA_ARGS is a list of words on purpose
"$AGENTIC_VERL" serve retrieval "${source_args[@]}" --host "$HOST" --port "$PORT" --cache-size "$CACHE_SIZE" \
    $EXTRA_ARGS >"$LOG_FILE" 2>&1 &
serve_around $! "retrieval server" RETRIEVAL_URL "$@"   # read by configs/tools/search_tool.yaml
