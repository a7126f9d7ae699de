# shellcheck shell=bash
# Sourced by the miniatures' demo scripts (recipes/demo/run.sh, recipes/funreason/demo.sh, recipes/v2p/demo.sh): numbered stages with
# their times, commands logged in full with a short console view, and cleanup of what the run started.
#
#   demo_env NAME                   the environment every stage runs in (PATH to .venv, offline hubs, THREADS torch
#                                   threads, Ray's session folder /tmp/ray_NAME_PID unless CPU_RAY_TMPDIR is set)
#   demo_begin N_STAGES             START; on exit (normal, an error, SIGTERM), stop every process this shell started,
#                                   DEMO_PIDS and the Ray processes of CPU_RAY_TMPDIR, remove it
#   stage N TITLE                   print the previous stage's seconds (kept in STAGE_SECONDS[N]) and the new header
#   stage_end                       the same for the last stage
#   run_logged LOG FILTER... -- CMD...   full output to LOG, the filter's lines to the terminal; on failure the log's
#                                   last lines and the command's exit code
#   progress PREFIX KEY...          a run_logged filter: verl's console "step:N - k:v - ..." lines, one short line each

demo_env() {
    export PATH="$ROOT/.venv/bin:$PATH"       # the recipes call python3 / torchrun / agentic-verl
    export AGENTIC_VERL HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    export RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
    # torch threads per process (one stage runs at a time, so each gets both cores; on a busy machine use THREADS=1:
    # two OpenMP threads that get preempted make a step 10-20x slower). Only OMP_NUM_THREADS is set: vLLM's CPU
    # worker pins itself to one core with OMP_NUM_THREADS=1, and with MKL_NUM_THREADS=2 also inherited from here,
    # generation at two threads ran ~6x slower (measured by changing that one variable; not traced further).
    THREADS=${THREADS:-2}
    export OMP_NUM_THREADS=$THREADS
    unset MKL_NUM_THREADS
    export CPU_RAY_TMPDIR=${CPU_RAY_TMPDIR:-/tmp/ray_$1_$$}   # our own Ray session folder: cleanup touches only it
}

demo_begin() {
    DEMO_STAGES=$1
    START=$(date +%s)
    STAGE_START=$START
    STAGE_NUMBER=""
    declare -gA STAGE_SECONDS=()
    DEMO_PIDS=()
    trap demo_cleanup EXIT
}

stage() {
    _stage_close
    STAGE_NUMBER=$1
    printf '\n[demo %3dm%02ds] (%s/%s) %s\n' $(((STAGE_START - START) / 60)) $(((STAGE_START - START) % 60)) "$1" \
        "$DEMO_STAGES" "$2"
}

stage_end() {
    _stage_close
    STAGE_NUMBER=""
}

_stage_close() {
    local now; now=$(date +%s)
    if [[ -n "$STAGE_NUMBER" ]]; then
        STAGE_SECONDS[$STAGE_NUMBER]=$((now - STAGE_START))
        printf '   (%ds)\n' $((now - STAGE_START))
    fi
    STAGE_START=$now
}

source "$(dirname "${BASH_SOURCE[0]}")/proc.sh"

demo_cleanup() {
    local pid pids
    kill_descendants $$   # a SIGTERM mid-stage: the stage's command (SFT, GRPO, an eval) and its children
    for pid in "${DEMO_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    # Ray processes of this run only (their command lines name our session folder); verl normally stops them.
    if [[ -n "${CPU_RAY_TMPDIR:-}" ]]; then
        pids=$(pgrep -f -- "$CPU_RAY_TMPDIR" || true)
        if [[ -n "$pids" ]]; then kill $pids 2>/dev/null || true; fi
        rm -rf "$CPU_RAY_TMPDIR"
    fi
}

progress() { # progress PREFIX KEY...: verl's console "step:N - k:v - ..." lines -> one short line per step
    awk -v prefix="$1" -v keys="${*:2}" 'BEGIN { n = split(keys, want, " ") }
        match($0, /step:[0-9]+ - /) { rec = substr($0, RSTART); split(rec, parts, " - ")
            line = prefix " step " substr(parts[1], 6)
            for (i in parts) { split(parts[i], kv, ":"); v = kv[2]   # np.float64(5.0) -> 5.0
                if (match(v, /\([^)]*\)/)) v = substr(v, RSTART + 1, RLENGTH - 2); value[kv[1]] = v }
            for (j = 1; j <= n; j++) if (want[j] in value) line = line sprintf("  %s=%.4g", want[j], value[want[j]])
            print line; fflush(); delete value }'
}

run_logged() { # run_logged LOG FILTER... -- CMD...: full output to LOG, the filter's lines to the terminal
    local log=$1; shift; local filter=(); while [[ "$1" != "--" ]]; do filter+=("$1"); shift; done; shift
    # A pipeline, not `"$@" > >(tee ...)`: bash forks a process substitution from the command's own process, so tee
    # was a child of the recipe's shell, whose exit trap (kill_descendants $$) killed it; the trap's next write (the
    # CPU cleanup's report) then hit a broken pipe, and the demos' GRPO stages failed after training (exit 1).
    set +e; "$@" 2>&1 | tee "$log" | "${filter[@]}"; local rc=${PIPESTATUS[0]}; set -e
    if [[ $rc != 0 ]]; then echo "FAILED (exit $rc): $*  -- last lines of $log:"; tail -n 30 "$log"; exit "$rc"; fi
}
