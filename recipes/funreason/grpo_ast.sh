#!/usr/bin/env bash
# Function calling with GRPO after FunReason's SFT: the function_call agent loop on BFCL-format RL rows, reward =
# BFCL AST match + 0.1 x FunReason format (reward_fns/configs/funreason_ast_format.yaml). FunReason itself has no RL
# stage; this follows the rule-reward RL of ToolRL / Tool-N1 on BFCL-style calls.
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-Coder-7B-Instruct with vLLM rollout.
#           CPU: AGENTIC_VERL_DEVICE=cpu MAX_PROMPT_LENGTH=2048 bash recipes/funreason/grpo_ast.sh  (SmolLM2-135M,
#           batch 4 x 2, 2 steps: a smoke run; BFCL prompts with their function docs exceed the CPU default of 512)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data fc --input xlam_with_cot.json --out data/funreason   (rl_train.parquet, rl_val.parquet;
#           no BFCL evaluation question is kept). CPU smoke data: agentic-verl data fc --input bfcl:live_simple
#           --exclude-eval bfcl:simple_python --missing-reasoning template --out data/funreason
# Model:    the SFT checkpoint of recipes/funreason/sft_srml.sh (SFT_CHECKPOINT_DIR) unless MODEL_PATH is set; without
#           either it refuses (MODEL_PATH=Qwen/Qwen2.5-Coder-7B-Instruct starts from the base model)
# Runtime:  GPU not measured (estimate: ~1 day on 8 GPUs for 300 steps). CPU smoke run (the data line above, SmolLM2
#           base, 2 steps x 4 x 2): 10 min 35 s on 2 cores, reward 0.0 (the base model writes no BFCL call in 128 tokens)
# Target:   BFCL Overall above the SFT start (FunReason Qwen2.5-Coder-7B: 83.66; published RL baselines: ToolRL
#           Qwen2.5-7B 80.54, Tool-N1-7B 82.01). Evaluate the actor's HF folder with `agentic-verl eval bfcl`.
# Settings: recipes/funreason/grpo_ast.yaml (over recipes/_common/grpo.yaml, agent_rl.yaml and verl's ppo_trainer);
#           this script passes machine settings and paths, and the optional knobs below only when set.
# Extra verl overrides go last: bash recipes/funreason/grpo_ast.sh trainer.total_training_steps=10
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/rl_knobs.sh"
source "$RECIPES/_common/engine.sh"

SFT_CHECKPOINT_DIR=${SFT_CHECKPOINT_DIR:-checkpoints/agentic_verl/funreason_srml}   # where sft_srml.sh saves
source "$RECIPES/_common/sft_handoff.sh"
stage_model_path "$SFT_CHECKPOINT_DIR" "Run recipes/funreason/sft_srml.sh first, or \
MODEL_PATH=Qwen/Qwen2.5-Coder-7B-Instruct bash $0"
DATA_DIR=${DATA_DIR:-data/funreason}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/rl_train.parquet}
VAL_FILE=${VAL_FILE:-$DATA_DIR/rl_val.parquet}
REWARD_CONFIG=${REWARD_CONFIG:-reward_fns/configs/funreason_ast_format.yaml}
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes (actor, reference); defaults from verl's
# examples/grpo_trainer/run_qwen3_8b_megatron.sh (Qwen3-8B, 8 GPUs: actor TP 2, PP 2); CP: verl's default
MEGATRON_TP=${MEGATRON_TP:-2}
MEGATRON_PP=${MEGATRON_PP:-2}
MEGATRON_CP=${MEGATRON_CP:-1}
EXPERIMENT=${EXPERIMENT:-funreason_grpo_ast}
# Optional, empty: grpo_ast.yaml's value. TRAIN_BATCH_SIZE PPO_MINI_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) ROLLOUT_N
# MAX_PROMPT_LENGTH MAX_RESPONSE_LENGTH ACTOR_LR TOTAL_TRAINING_STEPS ROLLOUT_NAME LOGGER PROJECT (the CPU switch
# sets the sizes, steps, rollout and logger itself).

rl_engine_overrides                              # ENGINE_OVERRIDES (empty for fsdp)
ARGS=(
    --config-path "$RECIPES" --config-name funreason/grpo_ast
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    actor_rollout_ref.model.path="$MODEL_PATH"
    +reward.custom_reward_function.reward_kwargs.config="$REWARD_CONFIG"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.experiment_name="$EXPERIMENT"
    "${RL_KNOB_OVERRIDES[@]}"
    "${ENGINE_OVERRIDES[@]}"
    "${DEVICE_OVERRIDES[@]}"
    "$@"
)
python3 -m verl.trainer.main_ppo "${ARGS[@]}"
