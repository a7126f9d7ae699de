#!/usr/bin/env bash
# V2P (docs/v2p.md) pointer SFT, stage 2 (full fine-tune): every weight trains on w_lm * CE + w_ptr * L_ptr; verl's
# own SFT trainer through agentic_verl.training.sft_trainer (loss v2p, stage full), from the warm-up's model. The
# recipe is recipes/v2p/sft_full.yaml (the paper's lr 5e-6 cosine, warmup 0.03, 1 epoch, batch 128, w_lm = w_ptr = 1;
# over v2p/pointer_sft.yaml); change any setting with a Hydra override:
#
#   bash recipes/v2p/sft_full.sh loss.kwargs.lm_weight=0.5
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct (the paper's base model).
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=train.parquet bash recipes/v2p/sft_full.sh  (after the CPU
#           warm-up: batch 4, 2 steps: smoke)
# Model:    MODEL_PATH, default the latest WARMUP_DIR (checkpoints/agentic_verl/v2p_warmup) checkpoint.
# Data:     the warm-up's (agentic-verl data gui ... --out data/v2p/train.parquet).
# Engine:   verl's FSDP engine only: ENGINE=megatron is refused before anything starts (the pointer head needs
#           hooks on FSDP's engine). `agentic-verl preflight gui --stage sft` checks data, model, GPUs first.
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/v2p_full)/global_step_N/huggingface: the V2P model;
#           evaluate it with MODEL_PATH=.../huggingface bash recipes/v2p/eval_screenspot.sh
# Target:   V2P-7B: ScreenSpot-v2 92.3, ScreenSpot-Pro 50.5 (published).
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/v2p/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/engine.sh"
refuse_megatron "$POINTER_SFT_NEEDS_FSDP"
source "$(dirname "${BASH_SOURCE[0]}")/../_common/sft_handoff.sh"   # before the CPU switch: its default is a text model
WARMUP_DIR=${WARMUP_DIR:-checkpoints/agentic_verl/v2p_warmup}
stage_model_path "$WARMUP_DIR" "No warm-up model: run recipes/v2p/sft_warmup.sh first or set MODEL_PATH to a V2P folder"
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
: "${DATA_DIR:=data/v2p}" "${TRAIN_FILE:=$DATA_DIR/train.parquet}"
launch sft_loss v2p/sft_full "gui sft" "$@"
