# shellcheck shell=bash
# Sourced by the recipes that launch verl. recipe_preflight KIND STAGE VERL_OVERRIDES...: `agentic-verl preflight
#   KIND --stage STAGE` (KIND rag-r1: data, model, retrieval server, mode, GPU memory; gui: `data gui` parquet, a
#   Qwen2.5-VL or V2P model, GPU memory; see agentic_verl/preflight/) on exactly the overrides verl will get; its
#   failure ends the recipe (set -e). PREFLIGHT=0 skips it. GPU_MEMORY_GB gives one GPU's memory where nvidia-smi
#   cannot.
recipe_preflight() {
    if [[ "${PREFLIGHT:-1}" == 0 ]]; then
        echo "PREFLIGHT=0: preflight checks skipped" >&2
        return 0
    fi
    python3 -m agentic_verl.cli preflight "$1" --stage "$2" ${GPU_MEMORY_GB:+--gpu-memory-gb "$GPU_MEMORY_GB"} \
        -- "${@:3}"
}
