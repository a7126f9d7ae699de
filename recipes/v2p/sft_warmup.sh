#!/usr/bin/env bash
# V2P (docs/methods.md "V2P") pointer SFT, stage 1 (warm-up): only the pointer head and the three pointer-token
# embeddings train, LM loss off; verl's own SFT trainer through agentic_verl.training.sft_trainer (loss v2p, stage
# warmup). Method settings (the paper's lr 1e-4, 1 epoch, LM loss off; batch 128) live in recipes/v2p/sft_warmup.yaml
# (+ pointer_sft.yaml, recipes/_common/sft.yaml, agentic_verl/training/config/loss/v2p.yaml); this script passes
# machine settings and paths only. Stage 2: sft_full.sh.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct (the paper's base model).
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=train.parquet bash recipes/v2p/sft_warmup.sh  (tiny random
#           Qwen2.5-VL with the real processor, batch 4, 2 steps: smoke)
# Model:    BASE_MODEL (a Qwen2.5-VL folder or hub id) -> INIT_DIR once: the three pointer tokens (new rows at the
#           mean embedding) and a fresh pointer head (python -m agentic_verl.v2p.model); MODEL_PATH=DIR skips that.
# Data:     agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images \
#               --out data/v2p/train.parquet     (any layout `data gui` reads: box -> pointer label per sample)
# Runtime:  not measured on GPUs. CPU smoke (tests/cpu/test_v2p_sft.py, 8 synthetic screenshots): notes/lab_notebook.md,
#           "V2P SFT and GRPO on CPU".
# Engine:   verl's FSDP engine only: ENGINE=megatron is refused before anything starts (the pointer head needs
#           hooks on FSDP's engine; docs/install.md, "Training engine")
# Checks:   `agentic-verl preflight gui --stage sft` before launching (data gui parquet with the pointer action,
#           a V2P pointer model with its processor, GPU memory budget); PREFLIGHT=0 skips it.
# Output:   SFT_CHECKPOINT_DIR/global_step_N/huggingface: a V2P folder (sft_full.sh starts from the last one).
# Target:   after both stages V2P-7B: ScreenSpot-v2 92.3, ScreenSpot-Pro 50.5 (published); logged every step:
#           train/loss (= v2p/pointer_loss here), v2p/kl, v2p/valley, v2p/lm_loss (not trained in this stage).
# Extra overrides go last: bash recipes/v2p/sft_warmup.sh loss.kwargs.valley_weight=0.5
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/engine.sh"
refuse_megatron "$POINTER_SFT_NEEDS_FSDP"

AGENTIC_VERL_DEVICE=${AGENTIC_VERL_DEVICE:-gpu}
PYTHON=${PYTHON:-python3}
if [[ "$AGENTIC_VERL_DEVICE" == cpu ]]; then
    INIT_DIR=${INIT_DIR:-${AGENTIC_VERL_CACHE:-/tmp/agentic_verl_cache}/v2p_tiny}
    INIT_FROM=(--tiny)                          # a tiny random Qwen2.5-VL (agentic_verl/v2p/tiny.py)
else
    INIT_DIR=${INIT_DIR:-checkpoints/agentic_verl/v2p_init}
    INIT_FROM=(--base "${BASE_MODEL:-Qwen/Qwen2.5-VL-7B-Instruct}")
fi
MODEL_PATH=${MODEL_PATH:-$INIT_DIR}             # set before device.sh: its CPU default is a text model
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/sft_knobs.sh"
source "$RECIPES/_common/preflight.sh"

DATA_DIR=${DATA_DIR:-data/v2p}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train.parquet}
VAL_FILE=${VAL_FILE:-null}
N_GPUS=${N_GPUS:-8}
# Optional, empty: the YAML's value. SFT_BATCH_SIZE (the paper's 128) MICRO_BATCH_SIZE (per GPU, 1; verl packs by
# tokens: data.max_token_len_per_gpu) SFT_MAX_LENGTH LR (the paper's 1e-4) TOTAL_EPOCHS TOTAL_TRAINING_STEPS LOGGER
# PROJECT EXPERIMENT (recipes/_common/sft_knobs.sh; the CPU switch sets the sizes, steps and logger itself).
# SFT_CHECKPOINT_DIR: default checkpoints/agentic_verl/v2p_warmup.

if [[ "$MODEL_PATH" == "$INIT_DIR" && ! -f "$INIT_DIR/config.json" ]]; then
    "$PYTHON" -m agentic_verl.v2p.model "${INIT_FROM[@]}" --out "$INIT_DIR"
fi

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
    --config-path "$RECIPES" --config-name v2p/sft_warmup "${ARGS[@]}"
