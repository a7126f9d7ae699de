#!/usr/bin/env bash
# Multi-turn function calling with GRPO, FunReason-MT style (arXiv 2510.24645): the bfcl_multi_turn agent loop plays
# BFCL's multi-turn protocol against the BFCL environment server (bfcl-eval's own API simulators, in .venv-bfcl),
# reward = bfcl-eval's multi-turn checker on the trajectory (reward_fns/bfcl_multi_turn.py). The recipe is
# recipes/funreason_mt/grpo.yaml (each value with its source or "assumed"); change any setting with a Hydra override:
#
#   bash recipes/funreason_mt/grpo.sh trainer.total_training_steps=10 \
#       actor_rollout_ref.rollout.custom.bfcl_multi_turn.max_tokens_per_step=1024
#
# Hardware: 8x A100/H100 80GB for Qwen3-4B-Instruct-2507 (FunReason-MT's base) with vLLM rollout; the environment
#           server is CPU only.
#           CPU: AGENTIC_VERL_DEVICE=cpu TRAIN_FILE=... VAL_FILE=... bash recipes/funreason_mt/grpo.sh
#           (SmolLM2-135M, batch 4 x 2, 2 steps, prompts up to 7168 tokens: a smoke run; tests/cpu/test_bfcl_mt_grpo.py)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_rl.yaml)
# Data:     agentic-verl data bfcl-multi-turn --out data/bfcl_mt/train --seed 0 --count 4000 --tokenizer MODEL
#           --sft-max-tokens 16384 (rl.parquet; sft.parquet for sft.sh) and a validation seed: --out data/bfcl_mt/val
#           --seed 1 --count 200 --no-sft (docs/funreason_mt.md). Generated tasks only: BFCL's own 800 questions are
#           its test set, and the preflight refuses training rows that share a turn or a state with them.
# Model:    the latest checkpoint of recipes/funreason_mt/sft.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set;
#           without either it refuses (MODEL_PATH=Qwen/Qwen3-4B-Instruct-2507 starts from the base model)
# Server:   BFCL_ENV_URL, when set, is a running server (`agentic-verl serve bfcl-env`); unset, this script starts one
#           on a free loopback port around training (scripts/launch_bfcl_env.sh: /health first, stopped when training
#           ends however it ends), after `agentic-verl preflight bfcl-mt --stage grpo` passes.
# Runtime:  GPU not measured (estimate: ~1 day on 8 GPUs for 60 steps). CPU smoke run: 11 min on 2 cores.
# Target:   BFCL v3 multi-turn: Qwen3-4B-Instruct-2507 15.75 -> FunReason-MT-4B 56.50 (model card; its SFT + RL).
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/funreason_mt/README.md.
set -euo pipefail
HERE=$(dirname "${BASH_SOURCE[0]}")
source "$HERE/../_common/launch.sh"
source "$HERE/../_common/net.sh"   # free_port
: "${SFT_CHECKPOINT_DIR:=checkpoints/agentic_verl/funreason_mt_sft}" "${DATA_DIR:=data/bfcl_mt}"
: "${TRAIN_FILE:=$DATA_DIR/train/rl.parquet}" "${VAL_FILE:=$DATA_DIR/val/rl.parquet}"
stage_model_path "$SFT_CHECKPOINT_DIR" "Run recipes/funreason_mt/sft.sh first, or \
MODEL_PATH=Qwen/Qwen3-4B-Instruct-2507 bash $0"
# On a CPU: BFCL prompts carry the classes' function docs (SmolLM2 holds 8192 tokens in all), and one full-length
# trajectory per actor micro-batch (8 packed SmolLM2 trajectories took the update to 18.3 GB: OOM on 24 GB)
CPU_ARGS=(data.max_prompt_length=7168 data.max_response_length=1024
          actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192
          actor_rollout_ref.rollout.custom.bfcl_multi_turn.max_tokens_per_step=256)
[[ "$AGENTIC_VERL_DEVICE" == cpu ]] || CPU_ARGS=()
ENV_URL_KEY=+actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url
if [[ -n "${BFCL_ENV_URL:-}" ]]; then
    STAGE_ARGS=("$ENV_URL_KEY=$BFCL_ENV_URL")
else   # the preflight checks .venv-bfcl (no server yet); the server starts once it passes
    : "${BFCL_ENV_PORT:=$(free_port)}"
    LAUNCH_PREFIX=(env HOST=127.0.0.1 PORT="$BFCL_ENV_PORT" LOG_FILE="${BFCL_ENV_LOG:-bfcl_env_server.log}"
                   EXTRA_ARGS="${BFCL_ENV_ARGS:-}" bash "$HERE/../../scripts/launch_bfcl_env.sh")
    LAUNCH_ONLY_ARGS=("$ENV_URL_KEY=http://127.0.0.1:$BFCL_ENV_PORT")
fi
launch main_ppo funreason_mt/grpo "bfcl-mt grpo" "$@"
