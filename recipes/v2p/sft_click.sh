#!/usr/bin/env bash
# Text-click SFT: the cold start of the GRPO click variant (recipes/v2p/grpo_click.sh). A Qwen2.5-VL learns to answer
# the gui_grounding prompt with `pyautogui.click(x=.., y=..)` in pixels of the screenshot it sees; verl's own SFT
# trainer (agentic_verl.training.sft_trainer, loss sft = verl's token mean) with verl's MultiTurnSFTDataset (the
# screenshot through the model's processor). No paper prescribes this stage for V2P (its method is the pointer SFT:
# sft_warmup.sh + sft_full.sh); GUI-R1 and GUI-G2 start RL from Qwen2.5-VL-Instruct, which already writes clicks.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct (not run here).
#           CPU: AGENTIC_VERL_DEVICE=cpu MODEL_PATH=DIR TRAIN_FILE=... bash recipes/v2p/sft_click.sh  (the V2P
#           miniature, recipes/v2p/demo.sh, runs it on the tiny random Qwen2.5-VL).
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron SFT engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data gui --data DIR --target text-click --out data/v2p/click_sft.parquet
#           (`messages`: the gui_grounding prompt stating the resized screenshot's size + the click at the box centre;
#           pass the processor's --max-pixels there if it is not Qwen2.5-VL-7B's).
# Model:    MODEL_PATH, default Qwen/Qwen2.5-VL-7B-Instruct.
# Settings: ours (no source): lr 1e-5 cosine, warmup 3%, batch 128, 1 epoch, max length 2048.
# Checks:   `agentic-verl preflight gui --stage sft-click` before launching (data gui parquet with a text click, a
#           Qwen2.5-VL with its processor, GPU memory budget); PREFLIGHT=0 skips it.
# Output:   SFT_CHECKPOINT_DIR/global_step_N/huggingface: start grpo_click.sh from it (MODEL_PATH=...), or
#           evaluate it: MODEL_PATH=.../huggingface bash recipes/v2p/eval_screenspot.sh
# Extra verl overrides go last: bash recipes/v2p/sft_click.sh optim.lr=2e-5
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-VL-7B-Instruct}   # set before device.sh: its CPU default is a text model
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/engine.sh"
source "$RECIPES/_common/preflight.sh"

DATA_DIR=${DATA_DIR:-data/v2p}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/click_sft.parquet}
VAL_FILE=${VAL_FILE:-null}
N_GPUS=${N_GPUS:-8}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes; verl has no Megatron SFT example for a VL model, so the defaults are those of its
# Megatron GRPO example for this model, examples/grpo_trainer/run_qwen2_5_vl_7b_megatron.sh (Qwen2.5-VL-7B-Instruct, 8
# GPUs: TP 2, PP 2); CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-2}
MEGATRON_PP=${MEGATRON_PP:-2}
MEGATRON_CP=${MEGATRON_CP:-1}
MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-4}          # per GPU
SFT_BATCH_SIZE=${SFT_BATCH_SIZE:-128}
SFT_MAX_LENGTH=${SFT_MAX_LENGTH:-2048}
LR=${LR:-1e-5}
TOTAL_EPOCHS=${TOTAL_EPOCHS:-1}
TOTAL_TRAINING_STEPS=${TOTAL_TRAINING_STEPS:-null}
LOGGER=${LOGGER:-['console','wandb']}
PROJECT=${PROJECT:-agentic_verl}
EXPERIMENT=${EXPERIMENT:-v2p_click_sft}
SFT_CHECKPOINT_DIR=${SFT_CHECKPOINT_DIR:-checkpoints/$PROJECT/$EXPERIMENT}

sft_engine_overrides                             # ENGINE_OVERRIDES (empty for fsdp)
lr_schedule cosine                               # optim.lr_scheduler_type (FSDP) or optim.lr_decay_style (Megatron)
ARGS=(
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    data.train_batch_size="$SFT_BATCH_SIZE"
    data.micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    data.max_length="$SFT_MAX_LENGTH"
    data.max_token_len_per_gpu="$SFT_MAX_LENGTH"
    model.path="$MODEL_PATH"
    optim.lr="$LR"
    optim.lr_warmup_steps_ratio=0.03
    trainer.total_epochs="$TOTAL_EPOCHS"
    trainer.total_training_steps="$TOTAL_TRAINING_STEPS"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.logger="$LOGGER"
    trainer.project_name="$PROJECT"
    trainer.experiment_name="$EXPERIMENT"
    trainer.default_local_dir="$SFT_CHECKPOINT_DIR"
    'checkpoint.save_contents=[model,optimizer,extra,hf_model]'   # + the HF folder grpo_click.sh and evaluation load
    "${ENGINE_OVERRIDES[@]}"
    "${SFT_DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight gui sft-click "${ARGS[@]}"
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m agentic_verl.training.sft_trainer "${ARGS[@]}"
