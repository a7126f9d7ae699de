#!/usr/bin/env bash
# FunReason's BFCL evaluation: `agentic-verl eval bfcl` on BFCL v4's AST and relevance categories (from the bfcl-eval
# package), BFCL's prompting-mode system prompt, greedy decoding, up to 4096 new tokens, scored with our checker in its
# official-compatible mode (the bfcl_ast reward's default); Non-Live AST, Live and Overall = (Non-Live + Live) / 2 as
# FunReason reports them, beside the published GPT-4o / Qwen2.5-Coder-7B-Instruct / FunReason rows, and the error
# types of the failures per category. The recipe is the command's defaults; its flags override them:
#
#   MODEL_PATH=DIR bash recipes/funreason/eval_bfcl.sh [EVAL BFCL FLAGS...]
#   MODEL_PATH=DIR bash recipes/funreason/eval_bfcl.sh --categories simple_python live --temperature 0.7
#
# Model:    MODEL_PATH=DIR, an HF folder (e.g. sft_srml.sh's .../global_step_N/huggingface), generated in-process with
#           vLLM (`--engine hf`: transformers); or a model already served by an OpenAI-compatible server:
#           --endpoint URL --model-name NAME --tokenizer DIR (`vllm serve DIR --served-model-name NAME`).
# Data:     the bfcl-eval package (pip install --no-deps bfcl-eval==2026.3.23; `make install` does): 3,641 questions
#           in 13 categories; --categories NAME... (names or groups all/non_live/live/ast/relevance).
# Settings: --prompt bfcl|funreason (BFCL's own, or the training prompt of `data fc`: BFCL's plus <think>);
#           --limit N (first N questions of each category); every other `agentic-verl eval bfcl --help` flag.
# Hardware: 1 GPU for a 7B model (all 3,641 questions: minutes with vLLM). CPU: AGENTIC_VERL_DEVICE=cpu
#           bash recipes/funreason/eval_bfcl.sh --engine hf --limit 2 --categories simple_python irrelevance
#           --max-tokens 32  (SmolLM2-135M: 2 min 19 s on 2 shared cores at load ~5).
# Target:   FunReason Qwen2.5-Coder-7B: Non-Live AST 87.00 / Live 80.31 / Overall 83.66 (base model 84.08 / 69.78 /
#           76.93; GPT-4o-2024-11-20 86.81 / 78.85 / 82.83), published.
# Output:   outputs/eval/bfcl_<label> (--label, default the model's name; or --out DIR): result.json (per-question
#           outputs and verdicts), table.md.
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/eval.sh"

eval_launch bfcl bfcl_ -- "$@"
