#!/usr/bin/env bash
# V2P (docs/methods.md "V2P") pointer SFT, stage 2 (full fine-tune): every weight trains on w_lm * CE + w_ptr * L_ptr;
# verl's own SFT trainer through agentic_verl.training.sft_trainer (loss v2p, stage full), from the warm-up's model.
# Method settings (the paper's lr 5e-6 cosine, warmup 0.03, 1 epoch, effective batch 128, w_lm = w_ptr = 1) live in
# recipes/v2p/sft_full.yaml (+ pointer_sft.yaml, recipes/_common/sft.yaml, agentic_verl/training/config/loss/v2p.yaml);
# this script passes machine settings and paths only.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct (the paper's base model).
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=train.parquet bash recipes/v2p/sft_full.sh  (after the CPU
#           warm-up: batch 4, 2 steps: smoke)
# Model:    MODEL_PATH, default the latest WARMUP_DIR/global_step_N/huggingface sft_warmup.sh saved.
# Data:     the warm-up's (agentic-verl data gui ... --out data/v2p/train.parquet).
# Runtime:  not measured on GPUs. CPU smoke (tests/cpu/test_v2p_sft.py): notes/lab_notebook.md, "V2P SFT and GRPO
#           on CPU".
# Engine:   verl's FSDP engine only: ENGINE=megatron is refused before anything starts (the pointer head needs
#           hooks on FSDP's engine; docs/install.md, "Training engine")
# Checks:   `agentic-verl preflight gui --stage sft` before launching (data gui parquet with the pointer action,
#           a V2P pointer model with its processor, GPU memory budget); PREFLIGHT=0 skips it.
# Output:   SFT_CHECKPOINT_DIR/global_step_N/huggingface: the V2P model; evaluate it with
#           MODEL_PATH=.../huggingface bash recipes/v2p/eval_screenspot.sh
# Target:   V2P-7B: ScreenSpot-v2 92.3, ScreenSpot-Pro 50.5 (published); logged every step: train/loss
#           (= w_lm * v2p/lm_loss + w_ptr * v2p/pointer_loss), v2p/kl, v2p/valley.
# Extra overrides go last: bash recipes/v2p/sft_full.sh loss.kwargs.lm_weight=0.5
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/engine.sh"
refuse_megatron "$POINTER_SFT_NEEDS_FSDP"

WARMUP_DIR=${WARMUP_DIR:-checkpoints/agentic_verl/v2p_warmup}
source "$RECIPES/_common/sft_handoff.sh"   # set before device.sh: its CPU default is a text model
stage_model_path "$WARMUP_DIR" "No warm-up model: run recipes/v2p/sft_warmup.sh first or set MODEL_PATH to a V2P folder"
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/sft_knobs.sh"
source "$RECIPES/_common/preflight.sh"

DATA_DIR=${DATA_DIR:-data/v2p}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train.parquet}
VAL_FILE=${VAL_FILE:-null}
N_GPUS=${N_GPUS:-8}
# Optional, empty: the YAML's value. SFT_BATCH_SIZE (the paper's 128) MICRO_BATCH_SIZE (per GPU, 1; verl packs by
# tokens: data.max_token_len_per_gpu) SFT_MAX_LENGTH LR (the paper's 5e-6) TOTAL_EPOCHS TOTAL_TRAINING_STEPS LOGGER
# PROJECT EXPERIMENT (recipes/_common/sft_knobs.sh; the CPU switch sets the sizes, steps and logger itself).
# SFT_CHECKPOINT_DIR: default checkpoints/agentic_verl/v2p_full.

ARGS=(
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    model.path="$MODEL_PATH"
    trainer.n_gpus_per_node="$N_GPUS"
    "${SFT_KNOB_OVERRIDES[@]}"
    "${SFT_DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight gui sft "${ARGS[@]}"
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m agentic_verl.training.sft_trainer \
    --config-path "$RECIPES" --config-name v2p/sft_full "${ARGS[@]}"
