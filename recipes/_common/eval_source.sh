# shellcheck shell=bash
# Sourced by the evaluation recipes of text models (rag_r1/eval.sh, funreason/eval_bfcl.sh, eval_humaneval.sh):
# `eval_model_source` turns MODEL_PATH (+ ENGINE) or ENDPOINT + MODEL_NAME (+ TOKENIZER) into the SOURCE array of
# `agentic-verl eval ...` flags, or refuses before anything starts.
eval_model_source() {
    if [[ -n "${ENDPOINT:-}" ]]; then
        [[ -n "${MODEL_NAME:-}" ]] || { echo "ENDPOINT needs MODEL_NAME (the served model's name)" >&2; exit 2; }
        SOURCE=(--endpoint "$ENDPOINT" --model-name "$MODEL_NAME" ${TOKENIZER:+--tokenizer "$TOKENIZER"})
    elif [[ -n "${MODEL_PATH:-}" ]]; then
        SOURCE=(--model "$MODEL_PATH" --engine "$ENGINE")
    else
        echo "set MODEL_PATH=DIR (an HF model folder) or ENDPOINT=URL MODEL_NAME=NAME (an OpenAI-compatible server)" >&2
        exit 2
    fi
}
