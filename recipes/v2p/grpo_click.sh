#!/usr/bin/env bash
# GUI grounding with GRPO (the V2P recipe's RL variant, docs/v2p.md): the gui_grounding agent loop shows Qwen2.5-VL a
# screenshot and an instruction, parses one text click `pyautogui.click(x=.., y=..)` in the pixels of the image it
# saw, maps it back to the screenshot; reward = click in the ground-truth box (GUI-R1's point reward). The recipe is
# recipes/v2p/grpo_click.yaml (each value with its source: GUI-R1, GUI-G2, ours); change any setting with a Hydra
# override, e.g. GUI-G2's Gaussian reward:
#
#   bash recipes/v2p/grpo_click.sh reward.custom_reward_function.name=compute_score_gaussian_point
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct with vLLM rollout (not run here).
#           CPU: AGENTIC_VERL_DEVICE=cpu DATA_DIR=... bash recipes/v2p/grpo_click.sh  (the tiny random Qwen2.5-VL of
#           `agentic-verl cpu-model tiny-vl`, batch 2 x 2, 2 steps: a smoke run; tests/cpu/test_v2p_grpo.py)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_rl.yaml)
# Data:     agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images \
#               --out data/v2p/train.parquet   (and a held-out set as VAL_FILE, e.g. ScreenSpot-v2 --split test).
# Model:    MODEL_PATH, default Qwen/Qwen2.5-VL-7B-Instruct (GUI-R1 and GUI-G2 start RL from the instruct model).
#           `agentic-verl preflight gui` checks data, model and GPU memory first.
# Runtime:  GPU not measured. CPU smoke run (tiny model, 2 steps of 2 prompts x 2 samples, 16 tokens): ~4 min.
# Target:   the start model's ScreenSpot-v2 / -Pro click accuracy going up (published: Qwen2.5-VL-7B 88.8 / 26.8,
#           GUI-G2-7B after its GRPO 93.3 / 47.5); evaluate the actor's HF folder with recipes/v2p/eval_screenspot.sh
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/v2p/README.md.
set -euo pipefail
if [[ "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then   # before the CPU switch: its default model is a text LM
    : "${MODEL_PATH:=$("${AGENTIC_VERL:-agentic-verl}" cpu-model tiny-vl)}"
fi
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
: "${MODEL_PATH:=Qwen/Qwen2.5-VL-7B-Instruct}" "${DATA_DIR:=data/v2p}"
: "${TRAIN_FILE:=$DATA_DIR/train.parquet}" "${VAL_FILE:=$DATA_DIR/test.parquet}"
# On a CPU: smaller batches and clicks, the processor's own image size, and the padded attention path (verl's
# remove-padding path for Qwen2-VL swaps in flash-attention varlen, verl/models/transformers/qwen2_vl.py)
CPU_ARGS=(data.train_batch_size=2 actor_rollout_ref.actor.ppo_mini_batch_size=2 data.max_response_length=16
          '~data.mm_processor_kwargs.size' actor_rollout_ref.model.use_remove_padding=False)
[[ "$AGENTIC_VERL_DEVICE" == cpu ]] || CPU_ARGS=()
launch main_ppo v2p/grpo_click "gui grpo" "$@"
