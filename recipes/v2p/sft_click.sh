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
# Settings: ours (no source): lr 1e-5 cosine, warmup 3%, batch 128, 1 epoch, max length 2048, in
#           recipes/v2p/sft_click.yaml (over recipes/_common/sft.yaml and verl's sft_trainer_engine); this script
#           passes machine settings and paths, and the optional knobs below only when set.
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
source "$RECIPES/_common/sft_knobs.sh"
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
# Optional, empty: sft_click.yaml's value. SFT_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) SFT_MAX_LENGTH (also the per-GPU
# token budget) LR TOTAL_EPOCHS TOTAL_TRAINING_STEPS LOGGER PROJECT EXPERIMENT (recipes/_common/sft_knobs.sh; the CPU
# switch sets the sizes, steps and logger itself). SFT_CHECKPOINT_DIR: default checkpoints/$PROJECT/$EXPERIMENT.

sft_engine_overrides                             # ENGINE_OVERRIDES (empty for fsdp)
lr_schedule cosine yaml                          # sft_click.yaml's schedule, in Megatron's optimizer's terms there
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
recipe_preflight gui sft-click "${ARGS[@]}"
torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m agentic_verl.training.sft_trainer \
    --config-path "$RECIPES" --config-name v2p/sft_click "${ARGS[@]}"
