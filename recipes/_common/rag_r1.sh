# shellcheck shell=bash
# Sourced by recipes/rag_r1/{ppo,grpo}.sh after recipes/_common/launch.sh: what the two RL stages share.
#
# rag_r1_stage_args: MODEL_PATH, when unset, becomes the HF folder of the latest checkpoint sft.sh saved under
#   SFT_CHECKPOINT_DIR, on either engine (sft_handoff.sh); with neither it refuses: RAG-R1 runs RL from the SFT cold
#   start (the CPU switch sets MODEL_PATH itself). STAGE_ARGS get the retrieval server's URL and the mode (sq | mq)
#   the data was written for, read from TRAIN_FILE with the trainer's python3 (nothing when it cannot be read: the
#   preflight then says why). A run-level mode: ++actor_rollout_ref.rollout.custom.rag_r1.mode=mq on the command
#   line (the preflight refuses one that disagrees with the data).
rag_r1_stage_args() {
    : "${SFT_CHECKPOINT_DIR:=checkpoints/agentic_verl/rag_r1_sft}" "${DATA_DIR:=data/rag_r1}"
    : "${TRAIN_FILE:=$DATA_DIR/train.parquet}" "${VAL_FILE:=$DATA_DIR/test.parquet}"
    : "${RETRIEVAL_URL:=http://127.0.0.1:8000}"
    stage_model_path "$SFT_CHECKPOINT_DIR" "Run bash recipes/rag_r1/sft.sh first (or set SFT_CHECKPOINT_DIR to its \
output), or start from the base model: MODEL_PATH=Qwen/Qwen2.5-7B-Instruct bash $0"
    local mode
    mode=$(python3 -m agentic_verl.cli preflight data-mode "$TRAIN_FILE" 2> /dev/null || true)
    STAGE_ARGS+=(+actor_rollout_ref.rollout.custom.rag_r1.retrieval_url="$RETRIEVAL_URL"
                 ${mode:+"++actor_rollout_ref.rollout.custom.rag_r1.mode=$mode"})
}
