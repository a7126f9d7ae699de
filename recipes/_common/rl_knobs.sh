# shellcheck shell=bash
# Sourced by the RL recipes (rag_r1/grpo.sh, rag_r1/ppo.sh, funreason/grpo_ast.sh, v2p/grpo_click.sh) after device.sh
# (whose CPU defaults fill some of these knobs): RL_KNOB_OVERRIDES holds a verl override for each knob the four share
# that is set; an unset or empty knob leaves the recipe's YAML value.
RL_KNOB_OVERRIDES=(
    ${TRAIN_BATCH_SIZE:+"data.train_batch_size=$TRAIN_BATCH_SIZE"}
    ${PPO_MINI_BATCH_SIZE:+"actor_rollout_ref.actor.ppo_mini_batch_size=$PPO_MINI_BATCH_SIZE"}
    ${MICRO_BATCH_SIZE:+"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$MICRO_BATCH_SIZE"
                        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=$MICRO_BATCH_SIZE"
                        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=$MICRO_BATCH_SIZE"}
    ${ROLLOUT_N:+"actor_rollout_ref.rollout.n=$ROLLOUT_N"}
    ${MAX_PROMPT_LENGTH:+"data.max_prompt_length=$MAX_PROMPT_LENGTH"}
    ${MAX_RESPONSE_LENGTH:+"data.max_response_length=$MAX_RESPONSE_LENGTH"}
    ${ACTOR_LR:+"actor_rollout_ref.actor.optim.lr=$ACTOR_LR"}
    ${TOTAL_TRAINING_STEPS:+"trainer.total_training_steps=$TOTAL_TRAINING_STEPS"}
    ${ROLLOUT_NAME:+"actor_rollout_ref.rollout.name=$ROLLOUT_NAME"}
    ${LOGGER:+"trainer.logger=$LOGGER"}
    ${PROJECT:+"trainer.project_name=$PROJECT"}
)
