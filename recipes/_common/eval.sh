# shellcheck shell=bash
# Sourced by the evaluation recipes (rag_r1/eval.sh, funreason/eval_bfcl.sh, funreason/eval_humaneval.sh,
# v2p/eval_screenspot.sh), after device.sh where the CPU switch applies:
#
#   eval_launch EVAL OUT_PREFIX RECIPE_FLAGS... -- "$@"
#
# runs `agentic-verl eval EVAL` on the model folder MODEL_PATH (unset: the user's --endpoint URL --model-name NAME),
# the recipe's flags, then the user's: a flag given twice keeps its last value, so the user's flags override the
# recipe's. The run is labelled NAME (the user's --label, else --model-name, else the model folder's name) and
# written to outputs/eval/OUT_PREFIX$NAME unless the user passes --out. Write flags as two words (--label X).
eval_launch() {
    local eval_name=$1 prefix=$2 recipe=() i
    shift 2
    while [[ $1 != -- ]]; do recipe+=("$1"); shift; done
    shift
    local -A flag=()
    for ((i = 1; i < $#; i++)); do [[ -z "${!i}" ]] || flag[${!i}]=${*:i+1:1}; done
    local model=${flag[--model]:-${MODEL_PATH:-}}
    [[ -z ${flag[--endpoint]:-} ]] || model=""    # a served model: MODEL_PATH (the CPU switch's, say) stays out
    if [[ -z "$model${flag[--endpoint]:-}" ]]; then
        echo "set MODEL_PATH=DIR (a model folder) or pass --endpoint URL --model-name NAME (an OpenAI-compatible" \
             "server)" >&2
        exit 2
    fi
    local name=${flag[--label]:-${flag[--model-name]:-$(basename "${model:-model}")}}
    "${AGENTIC_VERL:-agentic-verl}" eval "$eval_name" "${recipe[@]}" ${model:+--model "$model"} \
        --label "$name" --out "outputs/eval/$prefix$name" "$@"
}
