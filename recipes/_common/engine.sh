# shellcheck shell=bash
# Sourced by recipes/_common/launch.sh: ENGINE, verl's training engine (docs/megatron.md), checked when sourced, so
# that a wrong value stops the recipe before it does anything. A fact of the install (megatron-core, Transformer
# Engine and mbridge are there or not), hence an environment variable; every setting of the engine is in YAML.
#
#   ENGINE=fsdp (default)  verl's FSDP engine, as the recipe's YAML configures it: nothing is added.
#   ENGINE=megatron        verl's Megatron-Core engine, chosen the way verl's configs choose it (main_ppo:
#                          model_engine=megatron; the SFT trainer: engine=megatron optim=megatron). The recipes' YAML
#                          then include recipes/_common/engine/megatron_{rl,sft,sft_vl}.yaml (their `${model_engine}` /
#                          `${engine}` defaults entry): the parallel sizes, from verl's own Megatron examples, which a
#                          Hydra override changes, e.g. actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4.
#                          Composed and validated on CPU only here (docs/megatron.md, "Status").
#
# (The evaluation recipes choose their generation engine with the flag --engine vllm|hf, not with ENGINE.)
#
#   engine_args TRAINER      ENGINE_ARGS: the engine's group choices for main_ppo or an SFT trainer (empty for fsdp)
#   refuse_megatron WHY      exit 2 with WHY when ENGINE=megatron, before anything starts
ENGINE=${ENGINE:-fsdp}
ENGINE_ARGS=()

_check_engine() {
    case "$ENGINE" in
        fsdp | megatron) ;;
        *)
            echo "ENGINE=fsdp|megatron (verl's training engine), not '$ENGINE' (an evaluation's generation engine is" \
                "its flag --engine vllm|hf: unset ENGINE)" >&2
            exit 2
            ;;
    esac
    if [[ "$ENGINE" == megatron && "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then
        echo "ENGINE=megatron with AGENTIC_VERL_DEVICE=cpu: the CPU switch configures verl's FSDP engine only" \
            "(recipes/_common/device.sh); run ENGINE=megatron on GPUs" >&2
        exit 2
    fi
}

engine_args() {
    [[ "$ENGINE" == megatron ]] || return 0
    if [[ "$1" == main_ppo ]]; then
        ENGINE_ARGS=(model_engine=megatron)
    else
        ENGINE_ARGS=(engine=megatron optim=megatron)
    fi
}

# Why the V2P pointer SFT (v2p/sft_warmup.sh, sft_full.sh) refuses ENGINE=megatron
POINTER_SFT_NEEDS_FSDP="the V2P pointer loss runs on verl's FSDP engine only. It adds the pointer head through hooks on
that engine (agentic_verl/training/sft_trainer.py: the HF model as FSDP's engine builds it, and the model's extra
outputs); verl's Megatron engine builds a Megatron-Core model from the HF config instead (mbridge), which has no
pointer head and hands the loss log-probs only. Unset ENGINE (or ENGINE=fsdp)."

refuse_megatron() {
    if [[ "$ENGINE" == megatron ]]; then
        echo "ENGINE=megatron: $1" >&2
        exit 2
    fi
}

_check_engine
