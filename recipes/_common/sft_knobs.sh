# shellcheck shell=bash
# Sourced by the SFT recipes (rag_r1/sft.sh, funreason/sft_srml.sh, v2p/sft_click.sh, sft_warmup.sh, sft_full.sh)
# after device.sh (whose CPU defaults fill some of these knobs): SFT_KNOB_OVERRIDES holds a verl override for each
# knob they share that is set; an unset or empty knob leaves the recipe's YAML value (recipes/_common/sft.yaml and
# the recipe's own). SFT_CHECKPOINT_DIR unset: verl's checkpoints/<project_name>/<experiment_name>.
SFT_KNOB_OVERRIDES=(
    ${SFT_BATCH_SIZE:+"data.train_batch_size=$SFT_BATCH_SIZE"}
    ${MICRO_BATCH_SIZE:+"data.micro_batch_size_per_gpu=$MICRO_BATCH_SIZE"}
    ${SFT_MAX_LENGTH:+"data.max_length=$SFT_MAX_LENGTH"}
    ${LR:+"optim.lr=$LR"}
    ${TOTAL_EPOCHS:+"trainer.total_epochs=$TOTAL_EPOCHS"}
    ${TOTAL_TRAINING_STEPS:+"trainer.total_training_steps=$TOTAL_TRAINING_STEPS"}
    ${LOGGER:+"trainer.logger=$LOGGER"}
    ${PROJECT:+"trainer.project_name=$PROJECT"}
    ${EXPERIMENT:+"trainer.experiment_name=$EXPERIMENT"}
    ${SFT_CHECKPOINT_DIR:+"trainer.default_local_dir=$SFT_CHECKPOINT_DIR"}
)
