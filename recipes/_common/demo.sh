# shellcheck shell=bash
# Sourced by the demo scripts (recipes/demo/run.sh, recipes/funreason/demo.sh, recipes/v2p/demo.sh,
# recipes/demo/learn.sh): knob checks, numbered stages with their times, commands logged in full with a short console
# view, the CPU runs of the SFT and GRPO stage launchers, and cleanup of what the run started. Sets ROOT (the
# repository) and AGENTIC_VERL (default: the repository's .venv/bin/agentic-verl).
#
#   demo_fail MESSAGE               "SCRIPT: MESSAGE" on stderr, exit 2 (a knob error: before anything runs)
#   demo_ints MIN KNOB...           each knob an integer >= MIN;  demo_list KNOB N: N integers >= 1
#   demo_split                      EVAL_SPLIT is test (report) or dev (choose settings)
#   demo_env NAME                   the environment every stage runs in (PATH to .venv, offline hubs, THREADS torch
#                                   threads, Ray's session folder /tmp/ray_NAME_PID unless CPU_RAY_TMPDIR is set)
#   demo_begin N_STAGES             START; on exit (normal, an error, SIGTERM), stop every process this shell started,
#                                   DEMO_PIDS and the Ray processes of CPU_RAY_TMPDIR, remove it
#   stage N TITLE                   print the previous stage's seconds (kept in STAGE_SECONDS[N]) and the new header
#   stage_end                       the same for the last stage
#   run_logged LOG FILTER... -- CMD...   full output to LOG, the filter's lines to the terminal; on failure the log's
#                                   last lines and the command's exit code
#   progress PREFIX KEY...          a run_logged filter: verl's console "step:N - k:v - ..." lines, one short line each
#   demo_eval NAME ROWS EVAL FLAGS...   `agentic-verl eval EVAL FLAGS` -> OUT/eval/NAME, its table rows (grep -E ROWS)
#   demo_sft NAME RECIPE MODEL TRAIN_FILE STEPS LR KEYS OVERRIDES...   an SFT stage launcher on the CPU
#   demo_grpo RECIPE MODEL KEYS OVERRIDES...                        a GRPO stage launcher on the CPU; sets RL_MODEL
#   demo_summary METHOD FLAGS...    `agentic-verl demo summary` of this run (OUT/summary.json) with the stages' FLAGS
#   demo_elapsed                    minutes and seconds since START (e.g. 17m05s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
AGENTIC_VERL=${AGENTIC_VERL:-$ROOT/.venv/bin/agentic-verl}

demo_fail() {
    echo "$(basename "$0"): $*" >&2
    exit 2
}

demo_ints() {
    local min=$1 knob
    shift
    for knob; do
        [[ "${!knob}" =~ ^[0-9]+$ ]] && (( 10#${!knob} >= min )) ||
            demo_fail "$knob must be an integer >= $min, got '${!knob}'"
    done
}

demo_list() {
    local values value
    read -r -a values <<< "${!1}"
    (( ${#values[@]} == $2 )) || demo_fail "$1 takes $2 numbers, got '${!1}'"
    for value in "${values[@]}"; do
        [[ "$value" =~ ^[0-9]+$ ]] && (( 10#$value >= 1 )) || demo_fail "$1 takes integers >= 1, got '${!1}'"
    done
}

demo_split() {
    [[ "$EVAL_SPLIT" == test || "$EVAL_SPLIT" == dev ]] || demo_fail "EVAL_SPLIT must be test or dev, got '$EVAL_SPLIT'"
}

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
        # shellcheck disable=SC2034  # read by the demo scripts (their summaries' stage times)
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

demo_eval() {
    run_logged "$OUT/logs/eval_$1.log" grep --line-buffered -E "$2" -- \
        "$AGENTIC_VERL" eval "$3" "${@:4}" --out "$OUT/eval/$1"
}

# The stage launchers' CPU switch, the demo's sizes as Hydra overrides (the caller's last), no resuming, and the
# checkpoint in HF format only. SFT: STEPS steps of SFT_BATCH_SIZE rows in micro-batches of SFT_MICRO_BATCH_SIZE at
# LR -> OUT/ckpt/NAME/global_step_STEPS/huggingface, its log OUT/logs/NAME.log and OUT/logs/NAME_metrics.jsonl.
demo_sft() {
    local name=$1 recipe=$2 model=$3 train=$4 steps=$5 lr=$6 keys=$7
    shift 7
    rm -rf "$OUT/ckpt/$name"
    # shellcheck disable=SC2086  # KEYS: one word per metric
    AGENTIC_VERL_DEVICE=cpu MODEL_PATH="$model" TRAIN_FILE="$train" VAL_FILE=null SFT_CHECKPOINT_DIR="$OUT/ckpt/$name" \
        VERL_FILE_LOGGER_PATH="$OUT/logs/${name}_metrics.jsonl" \
        run_logged "$OUT/logs/$name.log" progress "  $name" $keys -- \
        bash "$recipe" data.train_batch_size="$SFT_BATCH_SIZE" data.micro_batch_size_per_gpu="$SFT_MICRO_BATCH_SIZE" \
            optim.lr="$lr" trainer.total_training_steps="$steps" "trainer.logger=['console','file']" \
            trainer.resume_mode=disable trainer.save_freq=-1 'checkpoint.save_contents=[hf_model]' \
            engine.use_torch_compile=False "$@"
    [[ -f "$OUT/ckpt/$name/global_step_$steps/huggingface/config.json" ]] ||
        demo_fail "$recipe saved no model at $OUT/ckpt/$name/global_step_$steps/huggingface (see $OUT/logs/$name.log)"
}

# GRPO: GRPO_STEPS steps of GRPO_BATCH_SIZE prompts x ROLLOUT_N samples at GRPO_LR, MAX_RESPONSE_LENGTH tokens, from
# MODEL -> RL_MODEL (OUT/ckpt/grpo/global_step_GRPO_STEPS/actor/huggingface), OUT/logs/grpo.log and
# grpo_metrics.jsonl. No KL
# loss (no reference model to run) unless the caller's overrides turn it on; bypass_mode: the rollout's log-probs
# are the old policy's (verl skips recomputing them); vLLM computes in fp32 here as the actor does
# (notes/lab_notebook.md "RAG-R1 demo").
demo_grpo() {
    local recipe=$1 model=$2 keys=$3
    shift 3
    rm -rf "$OUT/ckpt/grpo"
    # shellcheck disable=SC2086  # KEYS: one word per metric
    AGENTIC_VERL_DEVICE=cpu MODEL_PATH="$model" VERL_FILE_LOGGER_PATH="$OUT/logs/grpo_metrics.jsonl" \
        run_logged "$OUT/logs/grpo.log" progress "  GRPO" $keys timing_s/step -- \
        bash "$recipe" data.train_batch_size="$GRPO_BATCH_SIZE" \
            actor_rollout_ref.actor.ppo_mini_batch_size="$GRPO_BATCH_SIZE" actor_rollout_ref.rollout.n="$ROLLOUT_N" \
            actor_rollout_ref.actor.optim.lr="$GRPO_LR" data.max_response_length="$MAX_RESPONSE_LENGTH" \
            trainer.total_training_steps="$GRPO_STEPS" "trainer.logger=['console','file']" \
            actor_rollout_ref.actor.use_kl_loss=False algorithm.rollout_correction.bypass_mode=True \
            trainer.default_local_dir="$OUT/ckpt/grpo" trainer.save_freq="$GRPO_STEPS" trainer.test_freq=-1 \
            trainer.val_before_train=False trainer.resume_mode=disable actor_rollout_ref.rollout.seed="$SEED" \
            'actor_rollout_ref.actor.checkpoint.save_contents=[hf_model]' "$@"
    RL_MODEL="$OUT/ckpt/grpo/global_step_$GRPO_STEPS/actor/huggingface"
    [[ -f "$RL_MODEL/config.json" ]] || demo_fail "$recipe saved no model at $RL_MODEL (see $OUT/logs/grpo.log)"
}

demo_summary() {
    "$AGENTIC_VERL" demo summary --method "$1" --seed "$SEED" --out "$OUT" "${@:2}" --seconds-total $(($(date +%s) - START))
}

demo_elapsed() {
    local seconds=$(($(date +%s) - START))
    printf '%dm%02ds' $((seconds / 60)) $((seconds % 60))
}
