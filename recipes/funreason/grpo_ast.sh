#!/usr/bin/env bash
# Function calling with GRPO after FunReason's SFT: the function_call agent loop on BFCL-format RL rows, reward =
# BFCL AST match + 0.1 x FunReason format (reward_fns/configs/funreason_ast_format.yaml). FunReason itself has no RL
# stage; this follows the rule-reward RL of ToolRL / Tool-N1 on BFCL-style calls.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-Coder-7B-Instruct with vLLM rollout.
#           CPU: AGENTIC_VERL_DEVICE=cpu MAX_PROMPT_LENGTH=2048 bash recipes/funreason/grpo_ast.sh  (SmolLM2-135M,
#           batch 4 x 2, 2 steps: a smoke run; BFCL prompts with their function docs exceed the CPU default of 512)
# Data:     agentic-verl data fc --input xlam_with_cot.json --out data/funreason   (rl_train.parquet, rl_val.parquet;
#           no BFCL evaluation question is kept). CPU smoke data: agentic-verl data fc --input bfcl:live_simple
#           --exclude-eval bfcl:simple_python --missing-reasoning template --out data/funreason
# Model:    the SFT checkpoint of recipes/funreason/sft_srml.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set; without
#           either it refuses (MODEL_PATH=Qwen/Qwen2.5-Coder-7B-Instruct starts from the base model)
# Runtime:  GPU not measured (estimate: ~1 day on 8 GPUs for 300 steps). CPU smoke run (the data line above, SmolLM2
#           base, 2 steps x 4 x 2): 10 min 35 s on 2 cores, reward 0.0 (the base model writes no BFCL call in 128 tokens)
# Target:   BFCL Overall above the SFT start (FunReason Qwen2.5-Coder-7B: 83.66; published RL baselines: ToolRL
#           Qwen2.5-7B 80.54, Tool-N1-7B 82.01). Evaluate the actor's HF folder with `agentic-verl eval bfcl`.
# Extra verl overrides go last: bash recipes/funreason/grpo_ast.sh trainer.total_training_steps=10
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"

SFT_CHECKPOINT_DIR=${SFT_CHECKPOINT_DIR:-checkpoints/agentic_verl/funreason_srml}   # where sft_srml.sh saves
if [[ -z "${MODEL_PATH:-}" ]]; then
    STEP=$(cat "$SFT_CHECKPOINT_DIR/latest_checkpointed_iteration.txt" 2>/dev/null || true)
    if [[ -n "$STEP" ]] && compgen -G "$SFT_CHECKPOINT_DIR/global_step_$STEP/huggingface/*.safetensors" > /dev/null; then
        MODEL_PATH=$SFT_CHECKPOINT_DIR/global_step_$STEP/huggingface
    else
        echo "MODEL_PATH is not set and $SFT_CHECKPOINT_DIR holds no SFT checkpoint with HF weights; run" >&2
        echo "recipes/funreason/sft_srml.sh first, or MODEL_PATH=Qwen/Qwen2.5-Coder-7B-Instruct bash $0" >&2
        exit 2
    fi
fi
DATA_DIR=${DATA_DIR:-data/funreason}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/rl_train.parquet}
VAL_FILE=${VAL_FILE:-$DATA_DIR/rl_val.parquet}
REWARD_CONFIG=${REWARD_CONFIG:-reward_fns/configs/funreason_ast_format.yaml}
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
TRAIN_BATCH_SIZE=${TRAIN_BATCH_SIZE:-256}
PPO_MINI_BATCH_SIZE=${PPO_MINI_BATCH_SIZE:-64}
MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-4}          # per GPU
ROLLOUT_N=${ROLLOUT_N:-8}
MAX_PROMPT_LENGTH=${MAX_PROMPT_LENGTH:-4096}    # BFCL prompts carry every function's JSON doc
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-1024} # FunReason's targets: ~350 reasoning + ~31 call tokens
ACTOR_LR=${ACTOR_LR:-1e-6}
TOTAL_TRAINING_STEPS=${TOTAL_TRAINING_STEPS:-300}
ROLLOUT_NAME=${ROLLOUT_NAME:-vllm}
LOGGER=${LOGGER:-['console','wandb']}
PROJECT=${PROJECT:-agentic_verl}
EXPERIMENT=${EXPERIMENT:-funreason_grpo_ast}

ARGS=(
    algorithm.adv_estimator=grpo
    algorithm.use_kl_in_reward=False
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    data.train_batch_size="$TRAIN_BATCH_SIZE"
    data.max_prompt_length="$MAX_PROMPT_LENGTH"
    data.max_response_length="$MAX_RESPONSE_LENGTH"
    data.filter_overlong_prompts=True
    data.return_raw_chat=True
    actor_rollout_ref.model.path="$MODEL_PATH"
    actor_rollout_ref.actor.optim.lr="$ACTOR_LR"
    actor_rollout_ref.actor.ppo_mini_batch_size="$PPO_MINI_BATCH_SIZE"
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.001
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.rollout.name="$ROLLOUT_NAME"
    actor_rollout_ref.rollout.n="$ROLLOUT_N"
    actor_rollout_ref.rollout.temperature=1.0
    actor_rollout_ref.rollout.val_kwargs.temperature=0     # BFCL evaluates greedily
    actor_rollout_ref.rollout.val_kwargs.do_sample=False
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    actor_rollout_ref.rollout.agent.default_agent_loop=function_call
    'actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]'   # + actor/huggingface for eval
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    reward.reward_manager.name=agentic_trace
    trainer.v1.sampler.custom_sampler.path=pkg://agentic_verl.agent_loops.trace_sampler   # agent/* step metrics
    trainer.v1.sampler.custom_sampler.name=AgentMetricsReplayBuffer
    reward.custom_reward_function.path=reward_fns/composed.py
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.config="$REWARD_CONFIG"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.total_training_steps="$TOTAL_TRAINING_STEPS"
    trainer.logger="$LOGGER"
    trainer.project_name="$PROJECT"
    trainer.experiment_name="$EXPERIMENT"
    "${DEVICE_OVERRIDES[@]}"
    "$@"
)
python3 -m verl.trainer.main_ppo "${ARGS[@]}"
