#!/usr/bin/env bash
# FunReason's baseline: sft_srml.sh's run (same data, tokens, model and settings) with verl's plain token-mean SFT
# loss (loss=sft: agentic_verl/training/config/loss/sft.yaml), to compare with SRML. Checkpoints:
# checkpoints/agentic_verl/funreason_sft (the experiment is named after the loss).
#
#   bash recipes/funreason/sft_plain.sh trainer.total_epochs=1
#
# Hardware, data, runtime: as sft_srml.sh.   CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/funreason/sft_plain.sh
# Target:   the paper's plain-SFT comparison (Qwen2.5-Coder-7B FCDR-SFT: BFCL 86.27 / 77.60 / 81.94; code retention
#           HumanEval .470 vs FunReason's .841).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/sft_srml.sh" loss=sft "$@"
