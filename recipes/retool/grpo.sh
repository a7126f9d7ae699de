#!/usr/bin/env bash
# ReTool-style RL (arXiv 2504.11536): GRPO (python -m verl.trainer.main_ppo) where the policy writes Python, runs it
# with the code tool (agentic_verl.tools.code.PythonTool, through verl's ToolAgentLoop as `tool_agent_traced`, hermes
# parser) and answers; reward = exact match of the final <answer>N</answer> (reward_fns/numeric_em.py). The recipe
# is recipes/retool/grpo.yaml; change any setting with a Hydra override:
#
#   bash recipes/retool/grpo.sh trainer.total_training_steps=10 actor_rollout_ref.rollout.n=4
#
# Code execution is opt-in and ON here: the tool YAML (configs/tools/python_tool.yaml) sets
# allow_code_execution: true, so the model's code runs on this machine in agentic_verl's sandbox (needs root).
# Hardware: 8x A100/H100 80GB for Qwen2.5-7B-Instruct with vLLM rollout.
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/retool/grpo.sh (SmolLM2-135M; the miniature's sizes:
#           recipes/retool/demo.sh)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_rl.yaml)
# Data:     agentic-verl demo retool prepare --out data/retool ... (train.parquet, test.parquet)
# Model:    the latest checkpoint of recipes/retool/sft.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set
# Runtime:  GPU not measured. CPU: 281-483 s for 3 steps of 4 questions x 4 samples, Ray and vLLM start
#           included (2026-12-05, 2 cores; 51-120 s a step).
# Target:   none published for this task (ReTool-32B: AIME 2024 67.0 after 400 steps, on math data, not this one).
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/retool/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
: "${SFT_CHECKPOINT_DIR:=checkpoints/agentic_verl/retool_sft}" "${DATA_DIR:=data/retool}"
: "${TRAIN_FILE:=$DATA_DIR/train.parquet}" "${VAL_FILE:=$DATA_DIR/test.parquet}"
stage_model_path "$SFT_CHECKPOINT_DIR" "Run recipes/retool/sft.sh first, or MODEL_PATH=Qwen/Qwen2.5-7B-Instruct bash $0"
launch main_ppo retool/grpo "" "$@"
