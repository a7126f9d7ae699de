#!/usr/bin/env bash
# RAG-R1 stage 2: PPO with a GAE critic on HotpotQA search trajectories (rag_r1 agent loop + /retrieve server).
#
# Hardware: 8x A100/H100 80GB (as the paper: 500 steps, batch 512, Qwen2.5-7B-Instruct, vLLM rollout).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/ppo.sh  (SmolLM2-135M, batch 4, a smoke run)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data rag-r1 ... --out data/rag_r1 --mode sq|mq   (train.parquet, test.parquet); the data
#           decides the mode: RAG_MODE defaults to it and a RAG_MODE that disagrees is refused
# Model:    the SFT checkpoint of recipes/rag_r1/sft.sh (SFT_CHECKPOINT_DIR; actor and critic) unless MODEL_PATH is
#           set; without either it refuses (MODEL_PATH=Qwen/Qwen2.5-7B-Instruct starts from the base model)
# Needs:    a retrieval server: INDEX_DIR=... bash scripts/launch_retrieval_server.sh bash recipes/rag_r1/ppo.sh
# Checks:   `agentic-verl preflight rag-r1` before launching (data, models, /health + a test search, mode, GPU
#           memory budget; PREFLIGHT=0 skips it); the rag_r1 loop stops the run after
#           rollout.custom.rag_r1.max_consecutive_search_failures (32) failed searches in a row
# Validation: sampled as the paper, temperature 0.7. verl gives agent loops no validation flag, so validation
#           searches MAX_TURNS times like training (the paper: up to 5; `agentic-verl eval qa` runs its protocol)
# Runtime:  ~1-2 days on 8 GPUs; CPU smoke run: a few minutes per step with SmolLM2.
# Target:   RAG-R1-mq avg EM .455 over NQ/PopQA/TriviaQA/HotpotQA/2Wiki/Musique/Bamboogle (.495 HotpotQA).
# Settings: recipes/rag_r1/ppo.yaml (over recipes/_common/agent_rl.yaml and verl's ppo_trainer); this script passes
#           machine settings and paths, and the optional knobs below only when set.
# Extra verl overrides go last: bash recipes/rag_r1/ppo.sh trainer.total_training_steps=10
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/rl_knobs.sh"
source "$RECIPES/_common/engine.sh"
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
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes (actor, reference, critic); defaults from verl's
# examples/ppo_trainer/run_qwen3_8b_megatron.sh (Qwen3-8B, 8 GPUs: actor and critic TP 2, PP 2); CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-2}
MEGATRON_PP=${MEGATRON_PP:-2}
MEGATRON_CP=${MEGATRON_CP:-1}
EXPERIMENT=${EXPERIMENT:-rag_r1_ppo_${RAG_MODE:-data}}
# Optional, empty: ppo.yaml's value. TRAIN_BATCH_SIZE PPO_MINI_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) ROLLOUT_N
# MAX_PROMPT_LENGTH MAX_RESPONSE_LENGTH ACTOR_LR CRITIC_LR TOTAL_TRAINING_STEPS VAL_TEMPERATURE MAX_TURNS ROLLOUT_NAME
# LOGGER PROJECT (the CPU switch sets the sizes, steps, rollout and logger itself).

rl_engine_overrides                              # ENGINE_OVERRIDES (empty for fsdp)
ARGS=(
    --config-path "$RECIPES" --config-name rag_r1/ppo
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    actor_rollout_ref.model.path="$MODEL_PATH"
    critic.model.path="$CRITIC_MODEL_PATH"
    +actor_rollout_ref.rollout.custom.rag_r1.retrieval_url="$RETRIEVAL_URL"
    ${RAG_MODE:+"+actor_rollout_ref.rollout.custom.rag_r1.mode=$RAG_MODE"}
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.experiment_name="$EXPERIMENT"
    "${RL_KNOB_OVERRIDES[@]}"
    ${MICRO_BATCH_SIZE:+"critic.ppo_micro_batch_size_per_gpu=$MICRO_BATCH_SIZE"}
    ${CRITIC_LR:+"critic.optim.lr=$CRITIC_LR"}
    ${VAL_TEMPERATURE:+"actor_rollout_ref.rollout.val_kwargs.temperature=$VAL_TEMPERATURE"}
    ${MAX_TURNS:+"actor_rollout_ref.rollout.custom.rag_r1.max_turns=$MAX_TURNS"}
    "${ENGINE_OVERRIDES[@]}"
    "${DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight rag-r1 ppo "${ARGS[@]}"
python3 -m verl.trainer.main_ppo "${ARGS[@]}"
