#!/usr/bin/env bash
# RAG-R1 stage 1: SFT cold start on correct search trajectories, with verl's own SFT trainer (torchrun). Retrieved
# documents sit inside the assistant turn and are masked out of the loss (the pretokenized data of `agentic-verl data
# sft-trajectories`). The recipe is recipes/rag_r1/sft.yaml (over _common/sft.yaml and verl's sft_trainer_engine);
# change any setting with a Hydra override, e.g. chat-messages data with verl's own dataset:
#
#   bash recipes/rag_r1/sft.sh trainer.total_epochs=1 data.custom_cls.path=null data.custom_cls.name=null
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-7B-Instruct (the paper: ~19k step-level samples).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/sft.sh  (SmolLM2-135M, batch 4, 2 steps: a smoke run)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_sft.yaml)
# Data:     agentic-verl data sft-trajectories --retrieval-url URL --tokenizer MODEL --out data/rag_r1_sft/train.parquet
# Runtime:  ~1-2 h on 8 GPUs for 2 epochs (estimate); CPU smoke run with the tiny test model: ~1 min for 2 steps.
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/rag_r1_sft)/global_step_N/huggingface: ppo.sh and
#           grpo.sh start from the latest one. `agentic-verl preflight rag-r1 --stage sft` checks data, model, GPUs.
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/rag_r1/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"   # the CPU switch's MODEL_PATH comes first
: "${MODEL_PATH:=Qwen/Qwen2.5-7B-Instruct}" "${DATA_DIR:=data/rag_r1_sft}"
: "${TRAIN_FILE:=$DATA_DIR/train.parquet}"
launch sft rag_r1/sft "rag-r1 sft" "$@"
