# shellcheck shell=bash
# Sourced by recipes/rag_r1/{ppo,grpo}.sh after recipes/_common/device.sh and their knobs: the defaults they share.
#
# rag_r1_default_model: MODEL_PATH, when unset, is the HF folder of the latest checkpoint sft.sh saved under
#   SFT_CHECKPOINT_DIR (verl writes latest_checkpointed_iteration.txt and global_step_N/huggingface there). With
#   neither it refuses: RAG-R1 runs RL from the SFT cold start. (The CPU switch sets MODEL_PATH itself.)
# rag_r1_data_mode FILE: the mode (sq | mq) the rag_r1 parquet FILE was written for, or nothing if it cannot be
#   read (the preflight then reports why). Run with the trainer's python3, as the preflight is.

rag_r1_default_model() {
    [[ -n "${MODEL_PATH:-}" ]] && return 0
    local step hf
    step=$(cat "$SFT_CHECKPOINT_DIR/latest_checkpointed_iteration.txt" 2>/dev/null || true)
    hf="$SFT_CHECKPOINT_DIR/global_step_${step:-none}/huggingface"
    if [[ -n "$step" ]] && compgen -G "$hf/*.safetensors" > /dev/null; then
        MODEL_PATH=$hf
        echo "MODEL_PATH: the SFT checkpoint $MODEL_PATH"
        return 0
    fi
    echo "MODEL_PATH is not set and there is no SFT checkpoint with HF weights in $SFT_CHECKPOINT_DIR" >&2
    echo "(looked for latest_checkpointed_iteration.txt and global_step_N/huggingface/*.safetensors)." >&2
    echo "Run bash recipes/rag_r1/sft.sh first (or set SFT_CHECKPOINT_DIR to its output), or start from the base" >&2
    echo "model: MODEL_PATH=Qwen/Qwen2.5-7B-Instruct bash $0" >&2
    exit 2
}

rag_r1_data_mode() {
    python3 -m agentic_verl.cli preflight data-mode "$1" 2> /dev/null || true
}
