#!/usr/bin/env bash
# FunReason (arXiv 2505.20192) SFT with the Self-Refinement Multiscale Loss, on verl's own SFT trainer through
# agentic_verl.training.sft_trainer (verl's trainer with the loss chosen by config; verl 0.9.1 hard-codes it).
# Method settings (batch 512, lr 4e-5, warmup 0.05; alpha 0.7) live in agentic_verl/training/config/funreason.yaml
# (and loss/srml.yaml); this script passes machine knobs only. sft_plain.sh: the same run with plain SFT loss.
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
MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-4}          # per GPU
SFT_BATCH_SIZE=${SFT_BATCH_SIZE:-}              # empty: the YAML's (the paper's 512)
SFT_MAX_LENGTH=${SFT_MAX_LENGTH:-}              # empty: the YAML's
LR=${LR:-}                                      # empty: the YAML's (the paper's 4e-5)
SRML_ALPHA=${SRML_ALPHA:-}                      # empty: the YAML's (0.7)
TOTAL_TRAINING_STEPS=${TOTAL_TRAINING_STEPS:-null}
LOGGER=${LOGGER:-['console','wandb']}
SFT_CHECKPOINT_DIR=${SFT_CHECKPOINT_DIR:-checkpoints/agentic_verl/funreason_$SFT_LOSS}

sft_engine_overrides                             # ENGINE_OVERRIDES (empty for fsdp)
lr_schedule cosine yaml                          # funreason.yaml's schedule, in Megatron's optimizer's terms there
ARGS=(
    loss="$SFT_LOSS"
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    data.micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    model.path="$MODEL_PATH"
    trainer.total_training_steps="$TOTAL_TRAINING_STEPS"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.logger="$LOGGER"
    trainer.default_local_dir="$SFT_CHECKPOINT_DIR"
    'checkpoint.save_contents=[model,optimizer,extra,hf_model]'   # + the HF folder BFCL evaluation loads
    ${SFT_BATCH_SIZE:+data.train_batch_size="$SFT_BATCH_SIZE"}
    ${SFT_MAX_LENGTH:+data.max_length="$SFT_MAX_LENGTH"}
    ${LR:+optim.lr="$LR"}
    ${SRML_ALPHA:+loss.kwargs.alpha="$SRML_ALPHA"}
    "${ENGINE_OVERRIDES[@]}"
    "${SFT_DEVICE_OVERRIDES[@]}"
    "$@"
)
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m agentic_verl.training.sft_trainer \
    --config-name funreason "${ARGS[@]}"
