#!/usr/bin/env bash
# RAG-R1 stage 1: SFT cold start on correct search trajectories, with verl's own SFT trainer (torchrun).
# Retrieved documents sit inside the assistant turn and are masked out of the loss, so the default dataset is
# the pretokenized one written by `agentic-verl data sft-trajectories` (agentic_verl/training/sft_dataset.py).
# For chat-messages data (a `messages` column) use verl's own dataset: SFT_DATASET_PATH=null SFT_DATASET_NAME=null.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-7B-Instruct (the paper: ~19k step-level samples).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/sft.sh  (SmolLM2-135M, batch 4, a smoke run)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron SFT engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data sft-trajectories --retrieval-url URL --tokenizer MODEL --out data/rag_r1_sft/train.parquet
# Runtime:  ~1-2 h on 8 GPUs for 2 epochs; CPU smoke run with the tiny test model: ~1 min for 2 steps.
# Output:   SFT_CHECKPOINT_DIR/global_step_N/huggingface (full HF weights; latest_checkpointed_iteration.txt names
#           N): ppo.sh and grpo.sh start from it by default.
# Checks:   `agentic-verl preflight rag-r1 --stage sft` before launching (data, model, GPU memory budget;
#           PREFLIGHT=0 skips it)
# Target:   the SFT-only row of RAG-R1's ablation; the PPO stage (ppo.sh) starts from this checkpoint.
# Settings: recipes/rag_r1/sft.yaml (over recipes/_common/sft.yaml and verl's sft_trainer_engine); this script passes
#           machine settings and paths, and the optional knobs below only when set.
# Extra verl overrides go last: bash recipes/rag_r1/sft.sh trainer.total_epochs=1
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/engine.sh"
source "$RECIPES/_common/sft_knobs.sh"
source "$RECIPES/_common/rag_r1.sh"
source "$RECIPES/_common/preflight.sh"

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-7B-Instruct}
DATA_DIR=${DATA_DIR:-data/rag_r1_sft}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train.parquet}
VAL_FILE=${VAL_FILE:-null}
N_GPUS=${N_GPUS:-8}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes; defaults from verl's examples/sft/gsm8k/run_qwen_megatron_fsdp.sh
# (Qwen2.5-Math-7B SFT, 8 GPUs: TP 4, PP 1; that example also turns on Megatron-FSDP, which this recipe leaves off);
# CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-4}
MEGATRON_PP=${MEGATRON_PP:-1}
MEGATRON_CP=${MEGATRON_CP:-1}
# Optional, empty: sft.yaml's value. SFT_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) SFT_MAX_LENGTH LR TOTAL_EPOCHS
# TOTAL_TRAINING_STEPS LOGGER PROJECT EXPERIMENT (recipes/_common/sft_knobs.sh; the CPU switch sets the sizes, steps
# and logger itself); SFT_DATASET_PATH / SFT_DATASET_NAME (the dataset class; null: verl's own). SFT_CHECKPOINT_DIR:
# default checkpoints/$PROJECT/$EXPERIMENT (checkpoints/agentic_verl/rag_r1_sft, where ppo.sh / grpo.sh look).

sft_engine_overrides                             # ENGINE_OVERRIDES (empty for fsdp)
ARGS=(
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    model.path="$MODEL_PATH"
    trainer.n_gpus_per_node="$N_GPUS"
    "${SFT_KNOB_OVERRIDES[@]}"
    ${SFT_DATASET_PATH:+"data.custom_cls.path=$SFT_DATASET_PATH"}
    ${SFT_DATASET_NAME:+"data.custom_cls.name=$SFT_DATASET_NAME"}
    "${ENGINE_OVERRIDES[@]}"
    "${SFT_DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight rag-r1 sft "${ARGS[@]}"
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m verl.trainer.sft_trainer \
    --config-path "$RECIPES" --config-name rag_r1/sft "${ARGS[@]}"
