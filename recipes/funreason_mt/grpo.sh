#!/usr/bin/env bash
# Multi-turn function calling with GRPO, FunReason-MT style (arXiv 2510.24645): the bfcl_multi_turn agent loop plays
# BFCL's multi-turn protocol against the BFCL environment server (bfcl-eval's own API simulators, in .venv-bfcl),
# reward = bfcl-eval's multi-turn checker on the trajectory (reward_fns/bfcl_multi_turn.py).
#
# Hardware: 8x A100/H100 80GB for Qwen3-4B-Instruct-2507 (FunReason-MT's base) with vLLM rollout; the environment
#           server is CPU only. CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=... VAL_FILE=... bash recipes/funreason_mt/grpo.sh
#           (SmolLM2-135M, batch 4 x 2, 2 steps, prompts up to 7168 tokens: a smoke run; tests/cpu/test_bfcl_mt_grpo.py)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data bfcl-multi-turn --out data/bfcl_mt/train --seed 0 --count 4000 --tokenizer MODEL
#           --sft-max-tokens 16384 (rl.parquet; sft.parquet for sft.sh) and a validation seed: --out data/bfcl_mt/val
#           --seed 1 --count 200 --no-sft (docs/bfcl_multi_turn_data.md). Generated tasks only: BFCL's own 800
#           questions are its test set, and the preflight refuses training rows that share a turn or a state with them.
# Model:    the SFT checkpoint of recipes/funreason_mt/sft.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set; without
#           either it refuses (MODEL_PATH=Qwen/Qwen3-4B-Instruct-2507 starts from the base model)
# Server:   BFCL_ENV_URL, when set, is a running server (`agentic-verl serve bfcl-env`, or this script under
#           scripts/launch_bfcl_env.sh); unset, this script starts one on a free loopback port around training
#           (scripts/launch_bfcl_env.sh: /health first, stopped when training ends however it ends).
# Checks:   `agentic-verl preflight bfcl-mt --stage grpo` before launching (data, model, the server's /health or
#           .venv-bfcl, GPU memory budget; PREFLIGHT=0 skips it); the server is started only after it passes.
# Runtime:  GPU not measured (estimate: ~1 day on 8 GPUs for 60 steps of 128 x 8 multi-turn trajectories).
#           CPU smoke run: 11 min on 2 cores (tests/cpu/test_bfcl_mt_grpo.py: 2 steps of 2 tasks x 4 samples;
#           notes/lab_notebook.md).
# Target:   BFCL v3 multi-turn: Qwen3-4B-Instruct-2507 15.75 -> FunReason-MT-4B 56.50 (model card; its SFT + RL).
#           Evaluate the actor's HF folder: agentic-verl eval bfcl --categories multi_turn (README.md, step 5).
# Settings: recipes/funreason_mt/grpo.yaml (over recipes/_common/grpo.yaml, agent_rl.yaml and verl's ppo_trainer),
#           each with its source or "assumed"; this script passes machine settings and paths, and the optional knobs
#           below only when set.
# Extra verl overrides go last: bash recipes/funreason_mt/grpo.sh trainer.total_training_steps=10
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then
    # BFCL prompts carry the classes' function docs (thousands of tokens); SmolLM2 holds 8192 in all
    : "${MAX_PROMPT_LENGTH:=7168}" "${MAX_RESPONSE_LENGTH:=1024}" "${MAX_TOKENS_PER_STEP:=256}"
fi
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/rl_knobs.sh"
source "$RECIPES/_common/engine.sh"
source "$RECIPES/_common/preflight.sh"
source "$RECIPES/_common/net.sh"   # free_port
if [[ "$AGENTIC_VERL_DEVICE" == cpu ]]; then
    # verl packs the actor's micro-batches by tokens (grpo.yaml's use_dynamic_bsz) up to 32k tokens: on a CPU the
    # logits of 8 SmolLM2 trajectories in one micro-batch took the actor update to 18.3 GB (OOM on 24 GB). One
    # full-length trajectory per micro-batch at most:
    : "${PPO_MAX_TOKEN_LEN:=$((MAX_PROMPT_LENGTH + MAX_RESPONSE_LENGTH))}"
fi

SFT_CHECKPOINT_DIR=${SFT_CHECKPOINT_DIR:-checkpoints/agentic_verl/funreason_mt_sft}   # where sft.sh saves
source "$RECIPES/_common/sft_handoff.sh"
stage_model_path "$SFT_CHECKPOINT_DIR" "Run recipes/funreason_mt/sft.sh first, or \
MODEL_PATH=Qwen/Qwen3-4B-Instruct-2507 bash $0"
DATA_DIR=${DATA_DIR:-data/bfcl_mt}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train/rl.parquet}
VAL_FILE=${VAL_FILE:-$DATA_DIR/val/rl.parquet}
BFCL_ENV_URL=${BFCL_ENV_URL:-}                  # empty: start a server around training
BFCL_ENV_LOG=${BFCL_ENV_LOG:-bfcl_env_server.log}
BFCL_ENV_ARGS=${BFCL_ENV_ARGS:-}                # the server's limits, e.g. "--max-sessions 8192"
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes (actor, reference); defaults from verl's
# examples/grpo_trainer/run_qwen3_8b_megatron.sh (Qwen3-8B, 8 GPUs: actor TP 2, PP 2; the 4B model fits the same
# layout, assumed); CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-2}
MEGATRON_PP=${MEGATRON_PP:-2}
MEGATRON_CP=${MEGATRON_CP:-1}
EXPERIMENT=${EXPERIMENT:-funreason_mt_grpo}
# Optional, empty: grpo.yaml's value. TRAIN_BATCH_SIZE PPO_MINI_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) ROLLOUT_N
# MAX_PROMPT_LENGTH MAX_RESPONSE_LENGTH ACTOR_LR TOTAL_TRAINING_STEPS ROLLOUT_NAME LOGGER PROJECT MAX_STEPS_PER_TURN
# MAX_TOKENS_PER_STEP PPO_MAX_TOKEN_LEN (tokens per micro-batch when verl packs them; the CPU switch sets the sizes,
# steps, rollout and logger itself, and PPO_MAX_TOKEN_LEN to one full-length trajectory).

rl_engine_overrides                              # ENGINE_OVERRIDES (empty for fsdp)
ARGS=(
    --config-path "$RECIPES" --config-name funreason_mt/grpo
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    actor_rollout_ref.model.path="$MODEL_PATH"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.experiment_name="$EXPERIMENT"
    "${RL_KNOB_OVERRIDES[@]}"
    ${MAX_STEPS_PER_TURN:+"actor_rollout_ref.rollout.custom.bfcl_multi_turn.max_steps_per_turn=$MAX_STEPS_PER_TURN"}
    ${MAX_TOKENS_PER_STEP:+"actor_rollout_ref.rollout.custom.bfcl_multi_turn.max_tokens_per_step=$MAX_TOKENS_PER_STEP"}
    ${PPO_MAX_TOKEN_LEN:+"actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$PPO_MAX_TOKEN_LEN"}
    "${ENGINE_OVERRIDES[@]}"
    "${DEVICE_OVERRIDES[@]}"
)
ENV_URL_KEY=+actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url

if [[ -n "$BFCL_ENV_URL" ]]; then
    recipe_preflight bfcl-mt grpo "${ARGS[@]}" "$ENV_URL_KEY=$BFCL_ENV_URL" "$@"
    python3 -m verl.trainer.main_ppo "${ARGS[@]}" "$ENV_URL_KEY=$BFCL_ENV_URL" "$@"
else
    recipe_preflight bfcl-mt grpo "${ARGS[@]}" "$@"   # no server yet: data, model and .venv-bfcl
    BFCL_ENV_PORT=${BFCL_ENV_PORT:-$(free_port)}
    HOST=127.0.0.1 PORT="$BFCL_ENV_PORT" LOG_FILE="$BFCL_ENV_LOG" EXTRA_ARGS="$BFCL_ENV_ARGS" \
        bash "$RECIPES/../scripts/launch_bfcl_env.sh" \
        python3 -m verl.trainer.main_ppo "${ARGS[@]}" "$ENV_URL_KEY=http://127.0.0.1:$BFCL_ENV_PORT" "$@"
fi
