# Sourced by recipes/v2p/*.sh. gui_preflight STAGE OVERRIDE...: `agentic-verl preflight gui` on the overrides the
# recipe launches verl with (STAGE grpo: grpo_click.sh; sft: sft_warmup.sh / sft_full.sh); exits on a problem.
gui_preflight() {
    if [[ "${PREFLIGHT:-1}" == 0 ]]; then
        echo "PREFLIGHT=0: preflight checks skipped" >&2
        return 0
    fi
    python3 -m agentic_verl.cli preflight gui --stage "$1" ${GPU_MEMORY_GB:+--gpu-memory-gb "$GPU_MEMORY_GB"} \
        -- "${@:2}"
}
