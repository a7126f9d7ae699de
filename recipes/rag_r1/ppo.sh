#!/usr/bin/env bash
# RAG-R1 stage 2: PPO with a GAE critic on HotpotQA search trajectories (rag_r1 agent loop + /retrieve server).
#
# Hardware: 8x A100/H100 80GB (as the paper: 500 steps, batch 512, Qwen2.5-7B-Instruct, vLLM rollout).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/ppo.sh  (SmolLM2-135M, batch 4, a smoke run)
# Data:     agentic-verl data rag-r1 ... --out data/rag_r1 --mode sq|mq   (train.parquet, test.parquet); the data
#           decides the mode: RAG_MODE defaults to it and a RAG_MODE that disagrees is refused
# Model:    the SFT checkpoint of recipes/rag_r1/sft.sh (SFT_CHECKPOINT_DIR; actor and critic) unless MODEL_PATH is
#           set; without either it refuses (MODEL_PATH=Qwen/Qwen2.5-7B-Instruct starts from the base model)
# Needs:    a retrieval server: INDEX_DIR=... bash tools/launch_retrieval_server.sh bash recipes/rag_r1/ppo.sh
# Checks:   `agentic-verl preflight rag-r1` before launching (data, models, /health + a test search, mode, GPU
#           memory budget; PREFLIGHT=0 skips it); the rag_r1 loop stops the run after
#           rollout.custom.rag_r1.max_consecutive_search_failures (32) failed searches in a row
# Validation: sampled as the paper, temperature 0.7. verl gives agent loops no validation flag, so validation
#           searches MAX_TURNS times like training (the paper: up to 5; `agentic-verl eval qa` runs its protocol)
# Runtime:  ~1-2 days on 8 GPUs; CPU smoke run: a few minutes per step with SmolLM2.
# Target:   RAG-R1-mq avg EM .455 over NQ/PopQA/TriviaQA/HotpotQA/2Wiki/Musique/Bamboogle (.495 HotpotQA).
# Extra verl overrides go last: bash recipes/rag_r1/ppo.sh trainer.total_training_steps=10
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/rag_r1.sh"
source "$RECIPES/_common/preflight.sh"

SFT_CHECKPOINT_DIR=${SFT_CHECKPOINT_DIR:-checkpoints/agentic_verl/rag_r1_sft}   # where sft.sh saves
rag_r1_default_model                             # MODEL_PATH: as set, else the latest SFT checkpoint, else refuse
CRITIC_MODEL_PATH=${CRITIC_MODEL_PATH:-$MODEL_PATH}
DATA_DIR=${DATA_DIR:-data/rag_r1}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train.parquet}
VAL_FILE=${VAL_FILE:-$DATA_DIR/test.parquet}
RETRIEVAL_URL=${RETRIEVAL_URL:-http://127.0.0.1:8000}
RAG_MODE=${RAG_MODE:-$(rag_r1_data_mode "$TRAIN_FILE")}   # sq | mq; default: the mode the data was written for
VAL_TEMPERATURE=${VAL_TEMPERATURE:-0.7}          # RAG-R1's evaluation sampling
MAX_TURNS=${MAX_TURNS:-4}
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
TRAIN_BATCH_SIZE=${TRAIN_BATCH_SIZE:-512}
PPO_MINI_BATCH_SIZE=${PPO_MINI_BATCH_SIZE:-128}
MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-4}          # per GPU
ROLLOUT_N=${ROLLOUT_N:-1}
MAX_PROMPT_LENGTH=${MAX_PROMPT_LENGTH:-2048}
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-6144}
ACTOR_LR=${ACTOR_LR:-1e-6}
CRITIC_LR=${CRITIC_LR:-1e-5}
TOTAL_TRAINING_STEPS=${TOTAL_TRAINING_STEPS:-500}
ROLLOUT_NAME=${ROLLOUT_NAME:-vllm}
LOGGER=${LOGGER:-['console','wandb']}
PROJECT=${PROJECT:-agentic_verl}
EXPERIMENT=${EXPERIMENT:-rag_r1_ppo_${RAG_MODE:-data}}
MODE_OVERRIDE=()
if [[ -n "$RAG_MODE" ]]; then MODE_OVERRIDE=(+actor_rollout_ref.rollout.custom.rag_r1.mode="$RAG_MODE"); fi

ARGS=(
    algorithm.adv_estimator=gae
    algorithm.gamma=1.0
    algorithm.lam=1.0
    algorithm.use_kl_in_reward=True
    algorithm.kl_ctrl.kl_coef=0.001
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    data.train_batch_size="$TRAIN_BATCH_SIZE"
    data.max_prompt_length="$MAX_PROMPT_LENGTH"
    data.max_response_length="$MAX_RESPONSE_LENGTH"
    data.return_raw_chat=True
    actor_rollout_ref.model.path="$MODEL_PATH"
    actor_rollout_ref.actor.optim.lr="$ACTOR_LR"
    actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.285
    actor_rollout_ref.actor.ppo_mini_batch_size="$PPO_MINI_BATCH_SIZE"
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    actor_rollout_ref.actor.ppo_epochs=1
    actor_rollout_ref.actor.clip_ratio=0.2
    actor_rollout_ref.actor.entropy_coeff=0.001
    actor_rollout_ref.actor.use_kl_loss=False
    actor_rollout_ref.rollout.name="$ROLLOUT_NAME"
    actor_rollout_ref.rollout.n="$ROLLOUT_N"
    actor_rollout_ref.rollout.temperature=1.0
    actor_rollout_ref.rollout.top_p=0.95
    actor_rollout_ref.rollout.val_kwargs.temperature="$VAL_TEMPERATURE"
    actor_rollout_ref.rollout.val_kwargs.do_sample=True
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    actor_rollout_ref.rollout.agent.default_agent_loop=rag_r1
    'actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]'   # + actor/huggingface for eval.sh
    +actor_rollout_ref.rollout.custom.rag_r1.retrieval_url="$RETRIEVAL_URL"
    "${MODE_OVERRIDE[@]}"
    +actor_rollout_ref.rollout.custom.rag_r1.max_turns="$MAX_TURNS"
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    critic.model.path="$CRITIC_MODEL_PATH"
    critic.optim.lr="$CRITIC_LR"
    critic.optim.lr_warmup_steps_ratio=0.015
    critic.ppo_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    reward.reward_manager.name=agentic_trace
    trainer.v1.sampler.custom_sampler.path=pkg://agentic_verl.agent_loops.trace_sampler   # agent/* step metrics
    trainer.v1.sampler.custom_sampler.name=AgentMetricsReplayBuffer
    reward.custom_reward_function.path=reward_fns/qa_em.py
    reward.custom_reward_function.name=compute_score
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.total_training_steps="$TOTAL_TRAINING_STEPS"
    trainer.logger="$LOGGER"
    trainer.project_name="$PROJECT"
    trainer.experiment_name="$EXPERIMENT"
    "${DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight rag-r1 ppo "${ARGS[@]}"
python3 -m verl.trainer.main_ppo "${ARGS[@]}"
