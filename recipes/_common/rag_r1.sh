# shellcheck shell=bash
# Sourced by recipes/rag_r1/{ppo,grpo}.sh after recipes/_common/device.sh and their knobs: the defaults they share.
#
# rag_r1_default_model: MODEL_PATH, when unset, is the HF folder of the latest checkpoint sft.sh saved under
#   SFT_CHECKPOINT_DIR, on either engine (sft_handoff.sh). With neither it refuses: RAG-R1 runs RL from the SFT
#   cold start. (The CPU switch sets MODEL_PATH itself.)
# rag_r1_data_mode FILE: the mode (sq | mq) the rag_r1 parquet FILE was written for, or nothing if it cannot be
#   read (the preflight then reports why). Run with the trainer's python3, as the preflight is.

source "$(dirname "${BASH_SOURCE[0]}")/sft_handoff.sh"   # stage_model_path

rag_r1_default_model() {
    stage_model_path "$SFT_CHECKPOINT_DIR" "Run bash recipes/rag_r1/sft.sh first (or set SFT_CHECKPOINT_DIR to its \
output), or start from the base model: MODEL_PATH=Qwen/Qwen2.5-7B-Instruct bash $0"
}

rag_r1_data_mode() {
    python3 -m agentic_verl.cli preflight data-mode "$1" 2> /dev/null || true
}
