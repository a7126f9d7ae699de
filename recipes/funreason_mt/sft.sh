#!/usr/bin/env bash
# FunReason-MT-style SFT (arXiv 2510.24645) on generated multi-turn trajectories, with the SFT machinery of
# recipes/funreason/sft_plain.sh: agentic_verl.training.sft_trainer (verl's own SFT trainer) with verl's plain
# token-mean loss (loss=sft), here over the pretokenized trajectories of `data bfcl-multi-turn` (assistant messages
# learned; tool outputs and user turns masked). Settings: recipes/funreason_mt/sft.yaml (over recipes/_common/sft.yaml
# and verl's sft_trainer_engine), each with its source or "assumed".
#
# Hardware: 8x A100/H100 80GB for Qwen3-4B-Instruct-2507 (FunReason-MT's base).
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=data/bfcl_mt/smoke/sft.parquet bash recipes/funreason_mt/sft.sh
#           (SmolLM2-135M, batch 4, 2 steps: a smoke run; the data tokenized for SmolLM2, docs/bfcl_multi_turn_data.md)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron SFT engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data bfcl-multi-turn --out data/bfcl_mt/train --seed 0 --count 4000 \
#               --tokenizer Qwen/Qwen3-4B-Instruct-2507 --sft-max-tokens 16384   (sft.parquet: tokenized for THAT
#           model; generated tasks only, never BFCL's questions)
# Runtime:  not measured (estimate: a few hours on 8 GPUs for 2 epochs of a few thousand trajectories).
# Output:   checkpoints/agentic_verl/funreason_mt_sft/global_step_N/huggingface (full HF weights; SFT_CHECKPOINT_DIR
#           moves it): grpo.sh starts from the latest one.
# Checks:   `agentic-verl preflight bfcl-mt --stage sft` before launching (data, model, GPU memory; PREFLIGHT=0 skips)
# Target:   BFCL v3 multi-turn above the base's 15.75 (FunReason-MT publishes its SFT + RL result, 56.50, not SFT alone).
# Extra overrides go last: bash recipes/funreason_mt/sft.sh trainer.total_epochs=1
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then
    : "${SFT_MAX_LENGTH:=8192}"   # a trajectory with BFCL's function docs; the CPU switch's 512 would refuse every row
    # one trajectory per micro-batch: four ~3k-token ones in one (the CPU switch's 4) were killed for memory on a
    # 24 GB machine in the first step; one at a time holds ~6 GB (notes/lab_notebook.md, multi-turn SFT on a CPU)
    : "${MICRO_BATCH_SIZE:=1}"
fi
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/engine.sh"
source "$RECIPES/_common/sft_knobs.sh"
source "$RECIPES/_common/preflight.sh"

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-4B-Instruct-2507}
DATA_DIR=${DATA_DIR:-data/bfcl_mt}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train/sft.parquet}
VAL_FILE=${VAL_FILE:-null}
N_GPUS=${N_GPUS:-8}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes; defaults from verl's examples/sft/gsm8k/run_qwen_megatron_fsdp.sh (as
# recipes/funreason/sft_srml.sh: TP 4, PP 1); CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-4}
MEGATRON_PP=${MEGATRON_PP:-1}
MEGATRON_CP=${MEGATRON_CP:-1}
# Optional, empty: sft.yaml's value. SFT_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) SFT_MAX_LENGTH LR TOTAL_EPOCHS
# TOTAL_TRAINING_STEPS LOGGER PROJECT EXPERIMENT (recipes/_common/sft_knobs.sh; the CPU switch sets the sizes, steps
# and logger itself). SFT_CHECKPOINT_DIR: default checkpoints/$PROJECT/$EXPERIMENT
# (checkpoints/agentic_verl/funreason_mt_sft, where grpo.sh looks).

sft_engine_overrides                             # ENGINE_OVERRIDES (empty for fsdp)
lr_schedule cosine yaml                          # sft.yaml's schedule, in Megatron's optimizer's terms there
ARGS=(
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    model.path="$MODEL_PATH"
    trainer.n_gpus_per_node="$N_GPUS"
    "${SFT_KNOB_OVERRIDES[@]}"
    "${ENGINE_OVERRIDES[@]}"
    "${SFT_DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight bfcl-mt sft "${ARGS[@]}"
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m agentic_verl.training.sft_trainer \
    --config-path "$RECIPES" --config-name funreason_mt/sft "${ARGS[@]}"
