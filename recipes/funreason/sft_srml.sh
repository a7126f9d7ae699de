#!/usr/bin/env bash
# FunReason (arXiv 2505.20192) SFT with the Self-Refinement Multiscale Loss, on verl's own SFT trainer through
# agentic_verl.training.sft_trainer (verl's trainer with the loss chosen by config). The recipe is
# recipes/funreason/sft.yaml (the paper's batch 512, lr 4e-5, warmup 0.05; SRML alpha 0.7 in
# agentic_verl/training/config/loss/srml.yaml); change any setting with a Hydra override:
#
#   bash recipes/funreason/sft_srml.sh loss.kwargs.alpha=0.6 data.train_batch_size=256
#
# sft_plain.sh is the same run with verl's plain SFT loss (loss=sft).
# Hardware: 8x A100/H100 80GB for Qwen2.5-Coder-7B-Instruct (the paper's base model; also Llama-3.2-3B-Instruct).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/funreason/sft_srml.sh  (SmolLM2-135M, batch 4, 2 steps: smoke)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_sft.yaml); SRML follows verl's
#           own SFT loss contract, which both engines call the same way
# Data:     agentic-verl data fc --input xlam_with_cot.json --out data/funreason   (records need a chain of thought:
#           FunReason's FCDR refinement writes and filters it with a reasoning model, before `data fc`)
#           CPU smoke data from BFCL's live set, evaluated on non-live: agentic-verl data fc --input bfcl:live_simple
#           --exclude-eval bfcl:simple_python --missing-reasoning template --out data/funreason  (data.max_length=3072)
# Runtime:  not measured on GPUs (estimate: ~1-2 h per epoch of ~60k samples on 8 GPUs). CPU smoke with the BFCL
#           data above: 10 min for 2 steps + validation + HF checkpoint (2 shared cores).
# Output:   SFT_CHECKPOINT_DIR (default checkpoints/agentic_verl/funreason_srml)/global_step_N/huggingface.
# Target:   FunReason Qwen2.5-Coder-7B, BFCL Non-Live AST 87.00 / Live 80.31 / Overall 83.66 (FCDR-SFT: 86.27 /
#           77.60 / 81.94); logged every step: train/loss (L), srml/alpha, srml/loss_think, srml/loss_call.
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/funreason/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"   # the CPU switch's MODEL_PATH comes first
: "${MODEL_PATH:=Qwen/Qwen2.5-Coder-7B-Instruct}" "${DATA_DIR:=data/funreason}"
: "${TRAIN_FILE:=$DATA_DIR/sft_train.parquet}" "${VAL_FILE:=$DATA_DIR/sft_val.parquet}"   # val: never a BFCL question
launch sft_loss funreason/sft "" "$@"
