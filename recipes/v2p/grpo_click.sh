#!/usr/bin/env bash
# GUI grounding with GRPO (the V2P recipe's RL variant, docs/methods.md "V2P", "RL grounding references"): the
# gui_grounding agent loop shows Qwen2.5-VL a screenshot and an instruction, parses one text click
# `pyautogui.click(x=.., y=..)` in the pixels of the image it saw, maps it back to the screenshot; reward = click in
# the ground-truth box (GUI-R1's point reward; REWARD_FN=compute_score_gaussian_point for GUI-G2's Gaussian one).
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct with vLLM rollout (not run here).
#           CPU: AGENTIC_VERL_DEVICE=cpu DATA_DIR=... bash recipes/v2p/grpo_click.sh  (the tiny random Qwen2.5-VL of
#           `agentic-verl cpu-model tiny-vl`, batch 2 x 2, 2 steps: a smoke run; tests/cpu/test_v2p_grpo.py)
# Data:     agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images \
#               --out data/v2p/train.parquet   (and a held-out set as VAL_FILE, e.g. ScreenSpot-v2 --split test).
#           CPU smoke data: synthetic screenshots (agentic_verl.gui.synthetic) in a ScreenSpot layout -> `data gui`,
#           as tests/cpu/test_v2p_grpo.py writes them.
# Model:    MODEL_PATH, default Qwen/Qwen2.5-VL-7B-Instruct (GUI-R1 and GUI-G2 start RL from the instruct model).
# Checks:   `agentic-verl preflight gui` before launching (gui_grounding parquet, a Qwen2.5-VL with its processor,
#           GPU memory budget; PREFLIGHT=0 skips it).
# Settings: from GUI-R1's EasyR1 setup (its examples/qwen2_5_vl_7b_gui_grpo.sh over EasyR1's examples/config.yaml;
#           the public copies agree on these): lr 1e-6, weight decay 1e-2, update batch 128, temperature 1.0, KL as a
#           loss (low_var_kl, coef 1e-2), 5 samples per prompt, max_pixels 1258291, prompt 2048 tokens, responses with
#           reasoning in 1024. From GUI-G2 (run_grpo_gaussian.sh): 8 samples per prompt, lr 1e-6, 1 epoch. Ours:
#           128 prompts x 8 per step, 256 response tokens (one click, no reasoning asked: GUI-G1 finds long
#           reasoning hurts grounding), greedy validation (as `eval screenspot`).
# Runtime:  GPU not measured. CPU smoke run (tiny model, 2 steps of 2 prompts x 2 samples, 16 tokens): 220-246 s on
#           2 shared cores, ~45 s of it the two steps (the rest Ray, vLLM and FSDP start-up); reward 0 (no click).
# Target:   the start model's ScreenSpot-v2 / -Pro click accuracy going up (published: Qwen2.5-VL-7B 88.8 / 26.8,
#           GUI-G2-7B after its GRPO 93.3 / 47.5, V2P-7B after SFT 92.3 / 50.5); evaluate the actor's HF folder with
#           MODEL_PATH=.../actor/huggingface bash recipes/v2p/eval_screenspot.sh
# Extra verl overrides go last: bash recipes/v2p/grpo_click.sh trainer.total_training_steps=10
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${AGENTIC_VERL_DEVICE:-gpu}" == cpu ]]; then
    # the CPU switch's default model is a text LM; this loop needs a VL model and its processor
    : "${MODEL_PATH:=$("${AGENTIC_VERL:-agentic-verl}" cpu-model tiny-vl)}"
    : "${TRAIN_BATCH_SIZE:=2}" "${PPO_MINI_BATCH_SIZE:=2}" "${MICRO_BATCH_SIZE:=4}" "${ROLLOUT_N:=2}"
    : "${MAX_PROMPT_LENGTH:=512}" "${MAX_RESPONSE_LENGTH:=16}" "${MAX_PIXELS:=}"
fi
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/preflight.sh"
VL_DEVICE_OVERRIDES=()
if [[ "$AGENTIC_VERL_DEVICE" == cpu ]]; then
    # verl's remove-padding path for Qwen2-VL models swaps in its own attention (verl/models/transformers/
    # qwen2_vl.py: flash-attention varlen over packed sequences); on CPU the padded transformers path (sdpa) runs
    VL_DEVICE_OVERRIDES=(actor_rollout_ref.model.use_remove_padding=False)
fi

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-VL-7B-Instruct}
DATA_DIR=${DATA_DIR:-data/v2p}
TRAIN_FILE=${TRAIN_FILE:-$DATA_DIR/train.parquet}
VAL_FILE=${VAL_FILE:-$DATA_DIR/test.parquet}
REWARD_FN=${REWARD_FN:-compute_score}            # reward_fns/gui_click.py: click in box (GUI-R1)
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
TRAIN_BATCH_SIZE=${TRAIN_BATCH_SIZE:-128}
PPO_MINI_BATCH_SIZE=${PPO_MINI_BATCH_SIZE:-128}  # GUI-R1's update batch
MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-4}          # per GPU
ROLLOUT_N=${ROLLOUT_N:-8}                        # GUI-G2: 8 (GUI-R1: 5)
MAX_PROMPT_LENGTH=${MAX_PROMPT_LENGTH:-2048}     # GUI-R1; ~1600 image tokens at MAX_PIXELS
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-256}
MAX_PIXELS=${MAX_PIXELS-1258291}                 # GUI-R1; empty: the processor's own (Qwen2.5-VL: 12845056)
MIN_PIXELS=${MIN_PIXELS:-3136}                   # Qwen2.5-VL's processor default
ACTOR_LR=${ACTOR_LR:-1e-6}                       # GUI-R1 and GUI-G2
KL_COEF=${KL_COEF:-0.01}                         # GUI-R1 (GUI-G2: beta 0.04)
TOTAL_EPOCHS=${TOTAL_EPOCHS:-1}                  # GUI-G2
TOTAL_TRAINING_STEPS=${TOTAL_TRAINING_STEPS:-null}
ROLLOUT_NAME=${ROLLOUT_NAME:-vllm}
LOGGER=${LOGGER:-['console','wandb']}
PROJECT=${PROJECT:-agentic_verl}
EXPERIMENT=${EXPERIMENT:-v2p_grpo_click}

# The processor's resize bounds, for every party that resizes: verl's loop and trainer, and vLLM per request
# (transformers 5 reads them as size={shortest_edge, longest_edge}; the loop maps clicks back with the same bounds).
PIXEL_OVERRIDES=()
if [[ -n "$MAX_PIXELS" ]]; then
    PIXEL_OVERRIDES=(+data.mm_processor_kwargs.size.shortest_edge="$MIN_PIXELS"
                     +data.mm_processor_kwargs.size.longest_edge="$MAX_PIXELS")
fi

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
    "${PIXEL_OVERRIDES[@]}"
    actor_rollout_ref.model.path="$MODEL_PATH"
    actor_rollout_ref.actor.optim.lr="$ACTOR_LR"
    actor_rollout_ref.actor.optim.weight_decay=0.01
    actor_rollout_ref.actor.ppo_mini_batch_size="$PPO_MINI_BATCH_SIZE"
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef="$KL_COEF"
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.rollout.name="$ROLLOUT_NAME"
    actor_rollout_ref.rollout.n="$ROLLOUT_N"
    actor_rollout_ref.rollout.temperature=1.0
    actor_rollout_ref.rollout.val_kwargs.temperature=0     # greedy, as ScreenSpot is evaluated
    actor_rollout_ref.rollout.val_kwargs.do_sample=False
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    actor_rollout_ref.rollout.agent.default_agent_loop=gui_grounding
    +actor_rollout_ref.rollout.custom.gui_grounding.max_tokens="$MAX_RESPONSE_LENGTH"
    'actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]'   # + actor/huggingface for eval
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu="$MICRO_BATCH_SIZE"
    reward.reward_manager.name=agentic_trace
    trainer.v1.sampler.custom_sampler.path=pkg://agentic_verl.agent_loops.trace_sampler   # agent/* step metrics
    trainer.v1.sampler.custom_sampler.name=AgentMetricsReplayBuffer
    reward.custom_reward_function.path=reward_fns/gui_click.py
    reward.custom_reward_function.name="$REWARD_FN"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.total_epochs="$TOTAL_EPOCHS"
    trainer.total_training_steps="$TOTAL_TRAINING_STEPS"
    trainer.logger="$LOGGER"
    trainer.project_name="$PROJECT"
    trainer.experiment_name="$EXPERIMENT"
    "${DEVICE_OVERRIDES[@]}"
    "${VL_DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight gui grpo "${ARGS[@]}"
python3 -m verl.trainer.main_ppo "${ARGS[@]}"
