# shellcheck shell=bash
# The one launcher of the training stages (recipes/<method>/<stage>.sh). A stage sets its path defaults (machine
# facts: recipes/_common/machine.sh lists them all), sources this file, and ends with
#
#   launch TRAINER CONFIG PREFLIGHT "$@"
#
#   TRAINER    main_ppo (python3 -m verl.trainer.main_ppo) | sft (torchrun -m verl.trainer.sft_trainer) |
#              sft_loss (torchrun -m agentic_verl.training.sft_trainer: verl's SFT trainer with the loss by config)
#   CONFIG     the stage's YAML under recipes/, without .yaml (rag_r1/grpo): the recipe's settings
#   PREFLIGHT  "KIND STAGE": `agentic-verl preflight KIND --stage STAGE` on the launch verl will get, first (its
#              failure ends the stage; PREFLIGHT=0 skips it); "" for none
#
# The trainer gets --config-path recipes/ --config-name CONFIG and these Hydra overrides, later ones winning: the
# paths (data.train_files=$TRAIN_FILE, data.val_files=$VAL_FILE, the model), GPUs and nodes, STAGE_ARGS (the stage's
# own machine facts, e.g. its retrieval URL), ENGINE's choice (engine.sh), the CPU switch's (device.sh), CPU_ARGS (the
# stage's own CPU sizes), then the command line's "$@". LAUNCH_PREFIX (a command the trainer runs under, e.g. a server
# launcher) and LAUNCH_ONLY_ARGS (overrides for the trainer, not for the preflight) are optional.
_COMMON=$(dirname "${BASH_SOURCE[0]}")
source "$_COMMON/engine.sh"
source "$_COMMON/device.sh"
source "$_COMMON/machine.sh"       # after the CPU switch, whose N_GPUS (CPU_TRAINER_RANKS) must win over the 8 GPUs
source "$_COMMON/preflight.sh"
source "$_COMMON/sft_handoff.sh"   # stage_model_path
STAGE_ARGS=() CPU_ARGS=() LAUNCH_PREFIX=() LAUNCH_ONLY_ARGS=()

launch() {
    local trainer=$1 config=$2 preflight=$3 args
    shift 3
    engine_args "$trainer"
    args=(--config-path "$(cd "$_COMMON/.." && pwd)" --config-name "$config"
          data.train_files="$TRAIN_FILE" data.val_files="${VAL_FILE:-null}" trainer.n_gpus_per_node="$N_GPUS")
    if [[ "$trainer" == main_ppo ]]; then
        args+=(actor_rollout_ref.model.path="$MODEL_PATH" trainer.nnodes="$NNODES" "${STAGE_ARGS[@]}"
               "${ENGINE_ARGS[@]}" "${CPU_RL_ARGS[@]}")
    else
        args+=(model.path="$MODEL_PATH" ${SFT_CHECKPOINT_DIR:+"trainer.default_local_dir=$SFT_CHECKPOINT_DIR"}
               "${STAGE_ARGS[@]}" "${ENGINE_ARGS[@]}" "${CPU_SFT_ARGS[@]}")
    fi
    args+=("${CPU_ARGS[@]}" "$@")
    if [[ -n "$preflight" ]]; then
        # shellcheck disable=SC2086
        recipe_preflight $preflight "${args[@]}"
    fi
    case "$trainer" in
        main_ppo) "${LAUNCH_PREFIX[@]}" python3 -m verl.trainer.main_ppo "${args[@]}" "${LAUNCH_ONLY_ARGS[@]}" ;;
        sft | sft_loss)
            local module=verl.trainer.sft_trainer
            [[ "$trainer" == sft ]] || module=agentic_verl.training.sft_trainer
            "${LAUNCH_PREFIX[@]}" torchrun --standalone --nnodes=1 --nproc_per_node="$N_GPUS" -m "$module" \
                "${args[@]}" "${LAUNCH_ONLY_ARGS[@]}" ;;
        *) echo "launch: TRAINER is main_ppo, sft or sft_loss, not '$trainer'" >&2; exit 2 ;;
    esac
}
