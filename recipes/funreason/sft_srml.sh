#!/usr/bin/env bash
# FunReason (arXiv 2505.20192) SFT with the Self-Refinement Multiscale Loss, on verl's own SFT trainer through
# agentic_verl.training.sft_trainer (verl's trainer with the loss chosen by config; verl 0.9.1 hard-codes it).
# Method settings (batch 512, lr 4e-5, warmup 0.05; alpha 0.7) live in recipes/funreason/sft.yaml (over
# recipes/_common/sft.yaml, agentic_verl/training/config/loss/srml.yaml and verl's sft_trainer_engine); this script
# passes machine settings, paths and the optional knobs below only when set. sft_plain.sh: the same run, plain loss.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-Coder-7B-Instruct (the paper's base model; also Llama-3.2-3B-Instruct).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/funreason/sft_srml.sh  (SmolLM2-135M, batch 4, 2 steps: smoke)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron SFT engine (MEGATRON_TP/PP/CP below); SRML
#           follows verl's own SFT loss contract, which both engines call the same way (docs/install.md)
# Data:     agentic-verl data fc --input xlam_with_cot.json --out data/funreason   (records need a chain of thought:
#           FunReason's FCDR refinement writes and filters it with a reasoning model, before `data fc`)
#           CPU smoke data from BFCL's live set, evaluated on non-live: agentic-verl data fc --input bfcl:live_simple
#           --exclude-eval bfcl:simple_python --missing-reasoning template --out data/funreason  (SFT_MAX_LENGTH=3072)
# Runtime:  not measured on GPUs (estimate: ~1-2 h per epoch of ~60k samples on 8 GPUs). CPU smoke with the BFCL
#           data above: 10 min for 2 steps + validation + HF checkpoint (2 shared cores at load ~7; step 1: 195 s).
# Output:   SFT_CHECKPOINT_DIR/global_step_N/huggingface (full HF weights).
# Target:   FunReason Qwen2.5-Coder-7B, BFCL Non-Live AST 87.00 / Live 80.31 / Overall 83.66 (FCDR-SFT: 86.27 /
#           77.60 / 81.94); logged every step: train/loss (L), srml/alpha, srml/loss_think, srml/loss_call.
# Extra overrides go last: bash recipes/funreason/sft_srml.sh loss.kwargs.learnable=true
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/engine.sh"
source "$RECIPES/_common/sft_knobs.sh"

SFT_LOSS=${SFT_LOSS:-srml}                      # agentic_verl/training/config/loss/<name>.yaml: srml | sft
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-Coder-7B-Instruct}
DATA_DIR=${DATA_DIR:-data/funreason}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/sft_train.parquet}
VAL_FILE=${VAL_FILE:-$DATA_DIR/sft_val.parquet}  # held out from training, never a BFCL question (`data fc`)
N_GPUS=${N_GPUS:-8}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes; defaults from verl's examples/sft/gsm8k/run_qwen_megatron_fsdp.sh
# (Qwen2.5-Math-7B SFT, 8 GPUs: TP 4, PP 1; that example also turns on Megatron-FSDP, which this recipe leaves off);
# CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-4}
MEGATRON_PP=${MEGATRON_PP:-1}
MEGATRON_CP=${MEGATRON_CP:-1}
# Optional, empty: the YAML's value. SFT_BATCH_SIZE (the paper's 512) MICRO_BATCH_SIZE (per GPU) SFT_MAX_LENGTH LR
# (the paper's 4e-5) TOTAL_EPOCHS TOTAL_TRAINING_STEPS LOGGER PROJECT EXPERIMENT (recipes/_common/sft_knobs.sh; the
# CPU switch sets the sizes, steps and logger itself); SRML_ALPHA (0.7). SFT_CHECKPOINT_DIR: default
# checkpoints/agentic_verl/funreason_$SFT_LOSS.

sft_engine_overrides                             # ENGINE_OVERRIDES (empty for fsdp)
lr_schedule cosine yaml                          # sft.yaml's schedule, in Megatron's optimizer's terms there
ARGS=(
    loss="$SFT_LOSS"
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    model.path="$MODEL_PATH"
    trainer.n_gpus_per_node="$N_GPUS"
    "${SFT_KNOB_OVERRIDES[@]}"
    ${SRML_ALPHA:+loss.kwargs.alpha="$SRML_ALPHA"}
    "${ENGINE_OVERRIDES[@]}"
    "${SFT_DEVICE_OVERRIDES[@]}"
    "$@"
)
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m agentic_verl.training.sft_trainer \
    --config-path "$RECIPES" --config-name funreason/sft "${ARGS[@]}"
