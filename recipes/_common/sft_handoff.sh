# shellcheck shell=bash
# Sourced by recipes/_common/launch.sh (and v2p/sft_full.sh before it): the stages that start from an earlier stage's
# checkpoint, rag_r1/{ppo,grpo}.sh (through rag_r1.sh), funreason/grpo_ast.sh, funreason_mt/grpo.sh, v2p/sft_full.sh.
#
# stage_model_path DIR HINT: MODEL_PATH, when unset, becomes the HF folder of the latest checkpoint a verl trainer
#   saved in DIR, wherever its engine wrote it (ENGINE=fsdp: global_step_N/huggingface, ENGINE=megatron:
#   global_step_N/model/huggingface; agentic_verl/training/checkpoints.py reads the layout from verl's checkpoint
#   code). Without one it says where it looked, then HINT, and exits 2. Run with the trainer's python3.

stage_model_path() {
    [[ -n "${MODEL_PATH:-}" ]] && return 0
    local found
    if found=$(python3 -m agentic_verl.training.checkpoints hf-dir "$1") && [[ -n "$found" ]]; then
        MODEL_PATH=$found
        echo "MODEL_PATH: the checkpoint $MODEL_PATH"
        return 0
    fi
    echo "$2" >&2
    exit 2
}
