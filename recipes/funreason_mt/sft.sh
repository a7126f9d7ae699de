#!/usr/bin/env bash
# FunReason-MT-style SFT (arXiv 2510.24645) on generated multi-turn trajectories: agentic_verl.training.sft_trainer
# (verl's own SFT trainer) with verl's plain token-mean loss, over the pretokenized trajectories of `data
# bfcl-multi-turn` (assistant messages learned; tool outputs and user turns masked). The recipe is
# recipes/funreason_mt/sft.yaml (each value with its source or "assumed"); change any setting with a Hydra override:
#
#   bash recipes/funreason_mt/sft.sh trainer.total_epochs=1 optim.lr=2e-5
#
# Hardware: 8x A100/H100 80GB for Qwen3-4B-Instruct-2507 (FunReason-MT's base).
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=data/bfcl_mt/smoke/sft.parquet bash recipes/funreason_mt/sft.sh
#           (SmolLM2-135M, 2 steps: a smoke run; the data tokenized for SmolLM2, docs/funreason_mt.md)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_sft.yaml)
# Data:     agentic-verl data bfcl-multi-turn --out data/bfcl_mt/train --seed 0 --count 4000 \
#               --tokenizer Qwen/Qwen3-4B-Instruct-2507 --sft-max-tokens 16384   (sft.parquet: tokenized for THAT
#           model; generated tasks only, never BFCL's questions)
# Runtime:  not measured (estimate: a few hours on 8 GPUs for 2 epochs of a few thousand trajectories).
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/funreason_mt_sft)/global_step_N/huggingface: grpo.sh
#           starts from the latest one. `agentic-verl preflight bfcl-mt --stage sft` checks data, model, GPUs first.
# Target:   BFCL v3 multi-turn above the base's 15.75 (FunReason-MT publishes its SFT + RL result, 56.50, not SFT
#           alone).
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/funreason_mt/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"   # the CPU switch's MODEL_PATH comes first
: "${MODEL_PATH:=Qwen/Qwen3-4B-Instruct-2507}" "${DATA_DIR:=data/bfcl_mt}" "${TRAIN_FILE:=$DATA_DIR/train/sft.parquet}"
# On a CPU: a trajectory with BFCL's function docs (the switch's 512 tokens would refuse every row), one per
# micro-batch (four ~3k-token ones were killed for memory on a 24 GB machine; one holds ~6 GB: notes/lab_notebook.md)
CPU_ARGS=(data.max_length=8192 data.micro_batch_size_per_gpu=1)
[[ "$AGENTIC_VERL_DEVICE" == cpu ]] || CPU_ARGS=()
launch sft_loss funreason_mt/sft "bfcl-mt sft" "$@"
