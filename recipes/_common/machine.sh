# shellcheck shell=bash
# The machine facts: the only environment variables the training stages read (recipes/_common/launch.sh sources
# this). Every other setting is in the stage's YAML and changed by a Hydra override on the command line:
#   bash recipes/rag_r1/grpo.sh data.train_batch_size=64 trainer.total_training_steps=10
#
#   AGENTIC_VERL_DEVICE  gpu (default) | cpu: the CPU switch (recipes/_common/device.sh; with it CPU_TRAINER_RANKS,
#                        default 1, and CPU_RAY_TMPDIR, the run's Ray folder)
#   N_GPUS, NNODES       GPUs per node (8), nodes (1)
#   ENGINE               fsdp (default) | megatron: the training engine the install has (recipes/_common/engine.sh)
#   MODEL_PATH           the model (each stage's default is in its header; RL stages: the SFT stage's checkpoint)
#   CRITIC_MODEL_PATH    the PPO critic (default MODEL_PATH)
#   BASE_MODEL, INIT_DIR the V2P warm-up's base model and where its pointer model is written (v2p/sft_warmup.sh)
#   DATA_DIR             the stage's data folder; TRAIN_FILE, VAL_FILE default to files in it
#   SFT_CHECKPOINT_DIR   SFT stages: where they save (default checkpoints/<project>/<experiment>); RL stages: where
#                        they find the SFT model. WARMUP_DIR: v2p/sft_full.sh's warm-up checkpoints
#   RETRIEVAL_URL        the /retrieve server (rag_r1; default http://127.0.0.1:8000)
#   BFCL_ENV_URL         a running BFCL environment server (funreason_mt/grpo.sh; unset: it starts one on
#                        BFCL_ENV_PORT, logging to BFCL_ENV_LOG, with the server flags BFCL_ENV_ARGS)
#   PREFLIGHT=0          skip the preflight; GPU_MEMORY_GB: one GPU's memory where nvidia-smi cannot tell
#   AGENTIC_VERL         the agentic-verl command (default: the one on PATH); AGENTIC_VERL_CACHE: the CPU models
N_GPUS=${N_GPUS:-8}
NNODES=${NNODES:-1}
