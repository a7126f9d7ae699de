#!/usr/bin/env bash
# RAG-R1 evaluation: `agentic-verl eval qa` on the paper's seven datasets with its settings (temperature 0.7, up to
# 1024 new tokens per generation, up to 5 retrievals, top-3, EM with its evaluation normaliser), the published
# Search-R1 / RAG-R1-sq / RAG-R1-mq rows printed beside ours.
#
# Model:    MODEL_PATH=DIR (an HF folder, e.g. ppo.sh's checkpoint .../global_step_N/actor/huggingface; generated
#           in-process with vLLM, ENGINE=hf for transformers), or ENDPOINT=URL MODEL_NAME=NAME TOKENIZER=DIR for a
#           model already served by an OpenAI-compatible server (`vllm serve DIR --served-model-name NAME`).
# Data:     FlashRAG's files under DATA_DIR (default data/flashrag): nq, triviaqa, popqa, bamboogle (test) and
#           hotpotqa, 2wikimultihopqa, musique (dev); or DATA_FILES="a.jsonl b.jsonl" (any format `data rag-r1` reads).
# Needs:    the retrieval server at RETRIEVAL_URL (eval qa refuses to start without it).
# Hardware: 1 GPU for a 7B model (all seven sets, ~51k questions: a few hours with vLLM; LIMIT=500 per set: ~20 min).
#           CPU: AGENTIC_VERL_DEVICE=cpu LIMIT=8 bash recipes/rag_r1/eval.sh  (SmolLM2-135M via the CPU switch).
# Output:   OUT (default outputs/eval/<label>): result.json, table.md, trajectories/ (agentic-verl view).
# Extra `eval qa` flags go last: bash recipes/rag_r1/eval.sh --deterministic --concurrency 64
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/eval_source.sh"

ENDPOINT=${ENDPOINT:-}
MODEL_NAME=${MODEL_NAME:-}
TOKENIZER=${TOKENIZER:-}
ENGINE=${ENGINE:-vllm}
DATA_DIR=${DATA_DIR:-data/flashrag}
DATA_FILES=${DATA_FILES:-$(printf "$DATA_DIR/%s " nq/test.jsonl triviaqa/test.jsonl popqa/test.jsonl \
    hotpotqa/dev.jsonl 2wikimultihopqa/dev.jsonl musique/dev.jsonl bamboogle/test.jsonl)}
RETRIEVAL_URL=${RETRIEVAL_URL:-http://127.0.0.1:8000}
RAG_MODE=${RAG_MODE:-mq}                         # sq | mq: the prompt variant the model was trained with
LIMIT=${LIMIT:-}                                 # first N questions of each file
LABEL=${LABEL:-rag_r1_${RAG_MODE}}
OUT=${OUT:-outputs/eval/$LABEL}

eval_model_source
read -r -a FILES <<< "$DATA_FILES"

"${AGENTIC_VERL:-agentic-verl}" eval qa "${SOURCE[@]}" --data "${FILES[@]}" --retrieval-url "$RETRIEVAL_URL" \
    --mode "$RAG_MODE" ${LIMIT:+--limit "$LIMIT"} --label "$LABEL" --out "$OUT" "$@"
