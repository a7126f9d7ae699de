# shellcheck shell=bash
# Sourced by the training recipes, early: one knob, ENGINE, verl's training engine (docs/install.md, "Training
# engine"), checked when sourced, so that a wrong value stops the recipe before it does anything.
#
#   ENGINE=fsdp (default)  verl's FSDP engine, as the recipe's YAML configures it: nothing is added.
#   ENGINE=megatron        verl's Megatron-Core engine: the actor, reference and critic (RL) or the model (SFT), with
#                          the tensor / pipeline / context parallel sizes MEGATRON_TP / MEGATRON_PP / MEGATRON_CP
#                          that each recipe sets at its top (defaults from verl's own Megatron example for the model
#                          size, named there). Those examples are read from verl's repository
#                          (github.com/verl-project/verl, branch release/v0.9.0 at 885121936; verl's wheels ship no
#                          examples, and their Megatron settings are the same on main at 1dda039b9, 2026-08-22).
#                          Composed and validated on CPU only: never executed (docs/install.md, "Megatron: status").
#   MEGATRON_BRIDGE=mbridge (default) | megatron-bridge   the HF <-> Megatron bridge verl's engine builds the model
#                          with: mbridge (verl's vanilla_mbridge=True) is what `make test-gpu-megatron` installs from
#                          PyPI (install/megatron.txt, any Python >= 3.10); megatron-bridge (verl's own default)
#                          needs Python 3.12 and megatron-core's CUDA-built extras (docs/install.md, "Megatron
#                          requirements").
#
# (The evaluation recipes' ENGINE=vllm|hf is another knob of the same name: generation, not training.)
#
#   rl_engine_overrides      ENGINE_OVERRIDES for main_ppo: model_engine=megatron selects verl's megatron_actor,
#                            megatron_ref and megatron_critic configs; the sizes go to the actor (the reference reads
#                            the actor's: verl's ref/megatron_ref.yaml) and to the critic
#   sft_engine_overrides     ENGINE_OVERRIDES for the SFT trainer: engine=megatron optim=megatron and the sizes
#   lr_schedule STYLE [yaml] add the lr schedule STYLE (cosine, ...) to ENGINE_OVERRIDES in the engine's terms: FSDP's
#                            optim.lr_scheduler_type, Megatron's optim.lr_decay_style. `yaml`: the recipe's YAML
#                            already sets it as FSDP's key, which Megatron's optimizer config rejects, so it is removed
#   refuse_megatron WHY      exit 2 with WHY when ENGINE=megatron, before anything starts
ENGINE=${ENGINE:-fsdp}
MEGATRON_BRIDGE=${MEGATRON_BRIDGE:-mbridge}
ENGINE_OVERRIDES=()

_check_engine() {
    case "$ENGINE" in
        fsdp | megatron) ;;
        *)
            echo "ENGINE=fsdp|megatron (verl's training engine), not '$ENGINE' (the evaluation recipes' ENGINE=vllm|hf" \
                "is another knob: unset it for training)" >&2
            exit 2
            ;;
    esac
    case "$MEGATRON_BRIDGE" in
        mbridge | megatron-bridge) ;;
        *)
            echo "MEGATRON_BRIDGE=mbridge|megatron-bridge, not '$MEGATRON_BRIDGE'" >&2
            exit 2
            ;;
    esac
    if [[ "$ENGINE" == megatron && "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then
        echo "ENGINE=megatron with AGENTIC_VERL_DEVICE=cpu: the CPU switch configures verl's FSDP engine only" \
            "(recipes/_common/device.sh); run ENGINE=megatron on GPUs" >&2
        exit 2
    fi
}

rl_engine_overrides() {
    [[ "$ENGINE" == megatron ]] || return 0
    ENGINE_OVERRIDES=(
        model_engine=megatron
        actor_rollout_ref.actor.megatron.tensor_model_parallel_size="$MEGATRON_TP"
        actor_rollout_ref.actor.megatron.pipeline_model_parallel_size="$MEGATRON_PP"
        actor_rollout_ref.actor.megatron.context_parallel_size="$MEGATRON_CP"
        critic.megatron.tensor_model_parallel_size="$MEGATRON_TP"
        critic.megatron.pipeline_model_parallel_size="$MEGATRON_PP"
        critic.megatron.context_parallel_size="$MEGATRON_CP"
        actor_rollout_ref.actor.megatron.vanilla_mbridge="$(_vanilla_mbridge)"
        critic.megatron.vanilla_mbridge="$(_vanilla_mbridge)"
    )
}

sft_engine_overrides() {
    [[ "$ENGINE" == megatron ]] || return 0
    ENGINE_OVERRIDES=(
        engine=megatron
        optim=megatron
        engine.tensor_model_parallel_size="$MEGATRON_TP"
        engine.pipeline_model_parallel_size="$MEGATRON_PP"
        engine.context_parallel_size="$MEGATRON_CP"
        engine.vanilla_mbridge="$(_vanilla_mbridge)"
    )
}

# verl's switch between its bridges (engine/megatron.yaml; the reference reads the actor's: ref/megatron_ref.yaml)
_vanilla_mbridge() {
    if [[ "$MEGATRON_BRIDGE" == mbridge ]]; then echo True; else echo False; fi
}

lr_schedule() {
    if [[ "$ENGINE" == megatron ]]; then
        if [[ "${2:-}" == yaml ]]; then ENGINE_OVERRIDES+=("~optim.lr_scheduler_type"); fi
        ENGINE_OVERRIDES+=("optim.lr_decay_style=$1")
    elif [[ "${2:-}" != yaml ]]; then
        ENGINE_OVERRIDES+=("optim.lr_scheduler_type=$1")
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
