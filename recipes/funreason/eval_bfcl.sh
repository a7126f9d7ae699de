#!/usr/bin/env bash
# FunReason's BFCL evaluation: `agentic-verl eval bfcl` on BFCL v4's AST and relevance categories (from the bfcl-eval
# package), BFCL's prompting-mode system prompt, greedy decoding, up to 4096 new tokens, scored with our checker in its
# official-compatible mode (the bfcl_ast reward's default); Non-Live AST, Live and Overall = (Non-Live + Live) / 2 as
# FunReason reports them, beside the published GPT-4o / Qwen2.5-Coder-7B-Instruct / FunReason rows, and the error
# types of the failures per category.
#
# Model:    MODEL_PATH=DIR (an HF folder, e.g. sft_srml.sh's .../global_step_N/huggingface; generated in-process with
#           vLLM, ENGINE=hf for transformers), or ENDPOINT=URL MODEL_NAME=NAME TOKENIZER=DIR for a model already
#           served by an OpenAI-compatible server (`vllm serve DIR --served-model-name NAME`).
# Data:     the bfcl-eval package (pip install --no-deps bfcl-eval==2026.3.23; `make install` does): 3,641 questions
#           in 13 categories; CATEGORIES="simple_python live" (names or groups all/non_live/live/ast/relevance).
# Prompt:   PROMPT=bfcl (BFCL's own) or PROMPT=funreason (the training prompt of `data fc`: BFCL's plus <think>).
# Hardware: 1 GPU for a 7B model (all 3,641 questions: minutes with vLLM). CPU: AGENTIC_VERL_DEVICE=cpu ENGINE=hf
#           LIMIT=2 CATEGORIES="simple_python irrelevance" bash recipes/funreason/eval_bfcl.sh --max-tokens 32
#           (SmolLM2-135M: 2 min 19 s on 2 shared cores at load ~5).
# Target:   FunReason Qwen2.5-Coder-7B: Non-Live AST 87.00 / Live 80.31 / Overall 83.66 (base model 84.08 / 69.78 /
#           76.93; GPT-4o-2024-11-20 86.81 / 78.85 / 82.83), published.
# Output:   OUT (default outputs/eval/bfcl_<label>): result.json (per-question outputs and verdicts), table.md.
# Extra `eval bfcl` flags go last: bash recipes/funreason/eval_bfcl.sh --temperature 0.7 --concurrency 128
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/eval_source.sh"

ENDPOINT=${ENDPOINT:-}
MODEL_NAME=${MODEL_NAME:-}
TOKENIZER=${TOKENIZER:-}
ENGINE=${ENGINE:-vllm}
CATEGORIES=${CATEGORIES:-all}
PROMPT=${PROMPT:-bfcl}
LIMIT=${LIMIT:-}                                 # first N questions of each category
LABEL=${LABEL:-$(basename "${MODEL_NAME:-${MODEL_PATH:-model}}")}
OUT=${OUT:-outputs/eval/bfcl_$LABEL}

eval_model_source
read -r -a CATEGORY_LIST <<< "$CATEGORIES"

"${AGENTIC_VERL:-agentic-verl}" eval bfcl "${SOURCE[@]}" --categories "${CATEGORY_LIST[@]}" --prompt "$PROMPT" \
    ${LIMIT:+--limit "$LIMIT"} --label "$LABEL" --out "$OUT" "$@"
