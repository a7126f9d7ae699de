#!/usr/bin/env bash
# GUI grounding with GRPO (the V2P recipe's RL variant, docs/methods.md "V2P", "RL grounding references"): the
# gui_grounding agent loop shows Qwen2.5-VL a screenshot and an instruction, parses one text click
# `pyautogui.click(x=.., y=..)` in the pixels of the image it saw, maps it back to the screenshot; reward = click in
# the ground-truth box (GUI-R1's point reward; REWARD_FN=compute_score_gaussian_point for GUI-G2's Gaussian one).
#
# Hardware: 8x A100/H100 80GB for Qwen2.5-VL-7B-Instruct with vLLM rollout (not run here).
#           CPU: AGENTIC_VERL_DEVICE=cpu DATA_DIR=... bash recipes/v2p/grpo_click.sh  (the tiny random Qwen2.5-VL of
#           `agentic-verl cpu-model tiny-vl`, batch 2 x 2, 2 steps: a smoke run; tests/cpu/test_v2p_grpo.py)
# Engine:   ENGINE=fsdp (default) | megatron: verl's FSDP or Megatron engine (MEGATRON_TP/PP/CP below)
# Data:     agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images \
#               --out data/v2p/train.parquet   (and a held-out set as VAL_FILE, e.g. ScreenSpot-v2 --split test).
#           CPU smoke data: synthetic screenshots (agentic_verl.v2p.synthetic) in a ScreenSpot layout -> `data gui`,
#           as tests/cpu/test_v2p_grpo.py writes them.
# Model:    MODEL_PATH, default Qwen/Qwen2.5-VL-7B-Instruct (GUI-R1 and GUI-G2 start RL from the instruct model).
# Checks:   `agentic-verl preflight gui` before launching (gui_grounding parquet, a Qwen2.5-VL with its processor,
#           GPU memory budget; PREFLIGHT=0 skips it).
# Settings: recipes/v2p/grpo_click.yaml (over recipes/_common/grpo.yaml, agent_rl.yaml and verl's ppo_trainer), each
#           with its source: GUI-R1's EasyR1 setup (its examples/qwen2_5_vl_7b_gui_grpo.sh over EasyR1's
#           examples/config.yaml), GUI-G2's run_grpo_gaussian.sh, and ours. This script passes machine settings and
#           paths, and the optional knobs below only when set.
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
source "$RECIPES/_common/rl_knobs.sh"
source "$RECIPES/_common/engine.sh"
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
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
# ENGINE=fsdp (default) | megatron, verl's training engine (recipes/_common/engine.sh); ENGINE=megatron's tensor /
# pipeline / context parallel sizes (actor, reference); defaults from verl's
# examples/grpo_trainer/run_qwen2_5_vl_7b_megatron.sh (Qwen2.5-VL-7B-Instruct, 8 GPUs: actor TP 2, PP 2); CP: verl's
# default
MEGATRON_TP=${MEGATRON_TP:-2}
MEGATRON_PP=${MEGATRON_PP:-2}
MEGATRON_CP=${MEGATRON_CP:-1}
EXPERIMENT=${EXPERIMENT:-v2p_grpo_click}
# Optional, empty: grpo_click.yaml's value. REWARD_FN (a function of reward_fns/gui_click.py) TRAIN_BATCH_SIZE
# PPO_MINI_BATCH_SIZE MICRO_BATCH_SIZE (per GPU) ROLLOUT_N MAX_PROMPT_LENGTH MAX_RESPONSE_LENGTH MIN_PIXELS
# MAX_PIXELS ACTOR_LR KL_COEF TOTAL_EPOCHS TOTAL_TRAINING_STEPS ROLLOUT_NAME LOGGER PROJECT (the CPU switch sets the
# sizes, steps, rollout and logger itself). MAX_PIXELS set but empty: no resize bounds, the processor's own.
PIXEL_OVERRIDES=()
if [[ -v MAX_PIXELS && -z "$MAX_PIXELS" ]]; then
    PIXEL_OVERRIDES=('~data.mm_processor_kwargs.size')   # hydra's delete
else
    PIXEL_OVERRIDES=(${MIN_PIXELS:+"data.mm_processor_kwargs.size.shortest_edge=$MIN_PIXELS"}
                     ${MAX_PIXELS:+"data.mm_processor_kwargs.size.longest_edge=$MAX_PIXELS"})
fi

rl_engine_overrides                              # ENGINE_OVERRIDES (empty for fsdp)
ARGS=(
    --config-path "$RECIPES" --config-name v2p/grpo_click
    data.train_files="$TRAIN_FILE"
    data.val_files="$VAL_FILE"
    actor_rollout_ref.model.path="$MODEL_PATH"
    trainer.n_gpus_per_node="$N_GPUS"
    trainer.nnodes="$NNODES"
    trainer.experiment_name="$EXPERIMENT"
    "${PIXEL_OVERRIDES[@]}"
    ${REWARD_FN:+"reward.custom_reward_function.name=$REWARD_FN"}
    "${RL_KNOB_OVERRIDES[@]}"
    ${KL_COEF:+"actor_rollout_ref.actor.kl_loss_coef=$KL_COEF"}
    ${TOTAL_EPOCHS:+"trainer.total_epochs=$TOTAL_EPOCHS"}
    "${ENGINE_OVERRIDES[@]}"
    "${DEVICE_OVERRIDES[@]}"
    "${VL_DEVICE_OVERRIDES[@]}"
    "$@"
)
recipe_preflight gui grpo "${ARGS[@]}"
python3 -m verl.trainer.main_ppo "${ARGS[@]}"
