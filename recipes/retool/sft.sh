#!/usr/bin/env bash
# ReTool-style SFT (arXiv 2504.11536's cold start): verl's SFT trainer (torchrun -m verl.trainer.sft_trainer) on
# code-tool traces (question -> python tool call -> tool output -> <answer>N</answer>), the policy's turns learned,
# the prompt and the tool's output masked out. The recipe is recipes/retool/sft.yaml; change any setting with a Hydra
# override:
#
#   bash recipes/retool/sft.sh trainer.total_epochs=1 optim.lr=2e-5
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-7B-Instruct (ReTool's own runs: Qwen2.5-32B-Instruct).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/retool/sft.sh (SmolLM2-135M-Instruct; the miniature's sizes:
#           recipes/retool/demo.sh)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_sft.yaml)
# Data:     agentic-verl demo retool prepare --out data/retool --seed 0 --model MODEL
#           (train.parquet, test.parquet, sft.parquet: traces tokenized for THAT model's tokenizer)
# Runtime:  GPU not measured. CPU: 93-113 s for 4 steps of 8 traces, start included (2026-12-05, 2 cores).
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/retool_sft)/global_step_N/huggingface: grpo.sh
#           starts from the latest one.
# Target:   none published for this task; ReTool reports AIME accuracy after RL, not after its cold-start SFT.
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/retool/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"   # the CPU switch's MODEL_PATH comes first
: "${MODEL_PATH:=Qwen/Qwen2.5-7B-Instruct}" "${DATA_DIR:=data/retool}" "${TRAIN_FILE:=$DATA_DIR/sft.parquet}"
launch sft retool/sft "" "$@"
