#!/usr/bin/env bash
# Text-click SFT: the cold start of the GRPO click variant (recipes/v2p/grpo_click.sh). A Qwen2.5-VL learns to answer
# the gui_grounding prompt with `pyautogui.click(x=.., y=..)` in pixels of the screenshot it sees; verl's own SFT
# trainer (agentic_verl.training.sft_trainer, loss sft) with verl's MultiTurnSFTDataset. No paper prescribes this
# stage for V2P (its method is the pointer SFT); GUI-R1 and GUI-G2 start RL from Qwen2.5-VL-Instruct. The recipe is
# recipes/v2p/sft_click.yaml (ours: lr 1e-5 cosine, warmup 3%, batch 128, 1 epoch, max length 2048); change any
# setting with a Hydra override:
#
#   bash recipes/v2p/sft_click.sh optim.lr=2e-5
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct (not run here).
#           CPU: AGENTIC_VERL_DEVICE=cpu MODEL_PATH=DIR TRAIN_FILE=... bash recipes/v2p/sft_click.sh  (the V2P
#           miniature, recipes/v2p/demo.sh, runs it on the tiny random Qwen2.5-VL).
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_sft_vl.yaml)
# Data:     agentic-verl data gui --data DIR --target text-click --out data/v2p/click_sft.parquet
#           (pass the processor's --max-pixels there if it is not Qwen2.5-VL-7B's).
# Model:    MODEL_PATH, default Qwen/Qwen2.5-VL-7B-Instruct. `agentic-verl preflight gui --stage sft-click` first.
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/v2p_click_sft)/global_step_N/huggingface: start
#           grpo_click.sh from it (MODEL_PATH=...), or evaluate it with recipes/v2p/eval_screenspot.sh
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/v2p/README.md.
set -euo pipefail
: "${MODEL_PATH:=Qwen/Qwen2.5-VL-7B-Instruct}"   # before the CPU switch: its default is a text model
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
: "${DATA_DIR:=data/v2p}" "${TRAIN_FILE:=$DATA_DIR/click_sft.parquet}"
launch sft_loss v2p/sft_click "gui sft-click" "$@"
