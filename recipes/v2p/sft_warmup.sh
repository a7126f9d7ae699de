#!/usr/bin/env bash
# V2P (docs/v2p.md) pointer SFT, stage 1 (warm-up): only the pointer head and the three pointer-token embeddings
# train, LM loss off; verl's own SFT trainer through agentic_verl.training.sft_trainer (loss v2p, stage warmup). The
# recipe is recipes/v2p/sft_warmup.yaml (the paper's lr 1e-4, 1 epoch, batch 128; over v2p/pointer_sft.yaml); change
# any setting with a Hydra override:
#
#   bash recipes/v2p/sft_warmup.sh loss.kwargs.valley_weight=0.5
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct (the paper's base model).
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=train.parquet bash recipes/v2p/sft_warmup.sh  (tiny random
#           Qwen2.5-VL with the real processor, batch 4, 2 steps: smoke)
# Model:    BASE_MODEL (a Qwen2.5-VL folder or hub id) -> INIT_DIR once: the three pointer tokens (new rows at the
#           mean embedding) and a fresh pointer head (python -m agentic_verl.v2p.model); MODEL_PATH=DIR skips that.
# Data:     agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images \
#               --out data/v2p/train.parquet     (any layout `data gui` reads: box -> pointer label per sample)
# Engine:   verl's FSDP engine only: ENGINE=megatron is refused before anything starts (the pointer head needs
#           hooks on FSDP's engine). `agentic-verl preflight gui --stage sft` checks data, model, GPUs first.
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/v2p_warmup)/global_step_N/huggingface: a V2P folder
#           (sft_full.sh starts from the last one). Logged: v2p/pointer_loss, v2p/kl, v2p/valley, v2p/lm_loss.
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/v2p/README.md.
set -euo pipefail
if [[ "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then
    INIT_DIR=${INIT_DIR:-${AGENTIC_VERL_CACHE:-/tmp/agentic_verl_cache}/v2p_tiny}
    INIT_FROM=(--tiny)                          # a tiny random Qwen2.5-VL (agentic_verl/v2p/tiny.py)
else
    INIT_DIR=${INIT_DIR:-checkpoints/agentic_verl/v2p_init}
    INIT_FROM=(--base "${BASE_MODEL:-Qwen/Qwen2.5-VL-7B-Instruct}")
fi
: "${MODEL_PATH:=$INIT_DIR}"                    # before the CPU switch: its default is a text model
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
refuse_megatron "$POINTER_SFT_NEEDS_FSDP"
: "${DATA_DIR:=data/v2p}" "${TRAIN_FILE:=$DATA_DIR/train.parquet}"
if [[ "$MODEL_PATH" == "$INIT_DIR" && ! -f "$INIT_DIR/config.json" ]]; then
    python3 -m agentic_verl.v2p.model "${INIT_FROM[@]}" --out "$INIT_DIR"
fi
launch sft_loss v2p/sft_warmup "gui sft" "$@"
