#!/usr/bin/env bash
# RAG-R1 stage 2: PPO with a GAE critic on HotpotQA search trajectories (rag_r1 agent loop + /retrieve server),
# exact-match reward. The recipe is recipes/rag_r1/ppo.yaml (over rag_r1/common.yaml, _common/agent_rl.yaml and verl's
# ppo_trainer); change any setting with a Hydra override:
#
#   bash recipes/rag_r1/ppo.sh trainer.total_training_steps=10 critic.optim.lr=2e-5
#
# Hardware: 8x A100/H100 80GB (as the paper: 500 steps, batch 512, Qwen2.5-7B-Instruct, vLLM rollout).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/ppo.sh  (SmolLM2-135M, batch 4: a smoke run)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_rl.yaml)
# Data:     agentic-verl data rag-r1 ... --out data/rag_r1 --mode sq|mq   (DATA_DIR: train.parquet, test.parquet);
#           the mode is read from the data
# Model:    the latest checkpoint of recipes/rag_r1/sft.sh (SFT_CHECKPOINT_DIR; actor and critic) unless MODEL_PATH
#           is set; without either it refuses. CRITIC_MODEL_PATH: another critic.
# Needs:    a retrieval server: INDEX_DIR=... bash scripts/launch_retrieval_server.sh bash recipes/rag_r1/ppo.sh
#           (or RETRIEVAL_URL); `agentic-verl preflight rag-r1` checks data, models, the server and GPU memory first
# Runtime:  ~1-2 days on 8 GPUs (the paper); CPU smoke run: a few minutes per step with SmolLM2.
# Target:   RAG-R1-mq avg EM .455 over NQ/PopQA/TriviaQA/HotpotQA/2Wiki/Musique/Bamboogle (.495 HotpotQA).
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/rag_r1/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../_common/rag_r1.sh"
rag_r1_stage_args
STAGE_ARGS+=(critic.model.path="${CRITIC_MODEL_PATH:-$MODEL_PATH}")
launch main_ppo rag_r1/ppo "rag-r1 ppo" "$@"
