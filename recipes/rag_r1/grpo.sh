#!/usr/bin/env bash
# RAG-R1 with GRPO: the rag_r1 agent loop searching a /retrieve server, exact-match reward on the last <answer>.
# The recipe is recipes/rag_r1/grpo.yaml (over rag_r1/common.yaml, _common/grpo.yaml and verl's ppo_trainer); change
# any setting with a Hydra override:
#
#   bash recipes/rag_r1/grpo.sh data.train_batch_size=64 trainer.total_training_steps=10
#
# Hardware: 8x A100/H100 80GB (the paper's PPO sizes: batch 256 x 5 samples, Qwen2.5-7B-Instruct, vLLM rollout).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/grpo.sh  (SmolLM2-135M, batch 4 x 2: a smoke run)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_rl.yaml)
# Data:     agentic-verl data rag-r1 ... --out data/rag_r1 --mode sq|mq   (DATA_DIR: train.parquet, test.parquet);
#           the mode is read from the data
# Model:    the latest checkpoint of recipes/rag_r1/sft.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set; without
#           either it refuses (MODEL_PATH=Qwen/Qwen2.5-7B-Instruct starts from the base model)
# Needs:    a retrieval server: INDEX_DIR=... bash scripts/launch_retrieval_server.sh bash recipes/rag_r1/grpo.sh
#           (or RETRIEVAL_URL); `agentic-verl preflight rag-r1` checks data, models, the server and GPU memory first
# Runtime:  not measured on GPUs (the paper's PPO: ~1-2 days on 8 GPUs); CPU smoke run: minutes per step.
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/rag_r1/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../_common/rag_r1.sh"
rag_r1_stage_args
launch main_ppo rag_r1/grpo "rag-r1 grpo" "$@"
