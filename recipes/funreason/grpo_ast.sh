#!/usr/bin/env bash
# Function calling with GRPO after FunReason's SFT: the function_call agent loop on BFCL-format RL rows, reward =
# BFCL AST match + 0.1 x FunReason format (reward_fns/configs/funreason_ast_format.yaml). FunReason itself has no RL
# stage; this follows the rule-reward RL of ToolRL / Tool-N1 on BFCL-style calls. The recipe is
# recipes/funreason/grpo_ast.yaml (over _common/grpo.yaml and verl's ppo_trainer); change any setting with a Hydra
# override:
#
#   bash recipes/funreason/grpo_ast.sh trainer.total_training_steps=10 actor_rollout_ref.rollout.n=4
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-Coder-7B-Instruct with vLLM rollout.
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/funreason/grpo_ast.sh data.max_prompt_length=2048  (SmolLM2-135M,
#           batch 4 x 2, 2 steps: a smoke run; BFCL prompts with their function docs exceed the CPU default of 512)
# Engine:   ENGINE=fsdp (default) | megatron (sizes: recipes/_common/engine/megatron_rl.yaml)
# Data:     agentic-verl data fc --input xlam_with_cot.json --out data/funreason   (rl_train.parquet, rl_val.parquet;
#           no BFCL evaluation question is kept). CPU smoke data: agentic-verl data fc --input bfcl:live_simple
#           --exclude-eval bfcl:simple_python --missing-reasoning template --out data/funreason
# Model:    the latest checkpoint of recipes/funreason/sft_srml.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set;
#           without either it refuses (MODEL_PATH=Qwen/Qwen2.5-Coder-7B-Instruct starts from the base model)
# Runtime:  GPU not measured (estimate: ~1 day on 8 GPUs for 300 steps). CPU smoke run (2 steps x 4 x 2): ~10 min.
# Target:   BFCL Overall above the SFT start (FunReason Qwen2.5-Coder-7B: 83.66; published RL baselines: ToolRL
#           Qwen2.5-7B 80.54, Tool-N1-7B 82.01). Evaluate the actor's HF folder with recipes/funreason/eval_bfcl.sh.
# Machine facts (env): recipes/_common/machine.sh. The pipeline: recipes/funreason/README.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/launch.sh"
: "${SFT_CHECKPOINT_DIR:=checkpoints/agentic_verl/funreason_srml}" "${DATA_DIR:=data/funreason}"
: "${TRAIN_FILE:=$DATA_DIR/rl_train.parquet}" "${VAL_FILE:=$DATA_DIR/rl_val.parquet}"
stage_model_path "$SFT_CHECKPOINT_DIR" "Run recipes/funreason/sft_srml.sh first, or \
MODEL_PATH=Qwen/Qwen2.5-Coder-7B-Instruct bash $0"
launch main_ppo funreason/grpo_ast "" "$@"
