#!/usr/bin/env bash
# RAG-R1 evaluation: `agentic-verl eval qa` on the paper's seven datasets with its settings (temperature 0.7, up to
# 1024 new tokens per generation, up to 5 retrievals, top-3, EM with its evaluation normaliser: the command's
# defaults), the published Search-R1 / RAG-R1-sq / RAG-R1-mq rows printed beside ours.
#
#   MODEL_PATH=DIR bash recipes/rag_r1/eval.sh [EVAL QA FLAGS...]
#   MODEL_PATH=DIR bash recipes/rag_r1/eval.sh --mode sq --limit 500 --concurrency 64   # flags override the recipe's
#
# Model:    MODEL_PATH=DIR, an HF folder (e.g. ppo.sh's checkpoint .../global_step_N/actor/huggingface), generated
#           in-process with vLLM (`--engine hf`: transformers); or a model already served by an OpenAI-compatible
#           server: --endpoint URL --model-name NAME --tokenizer DIR (`vllm serve DIR --served-model-name NAME`).
# Data:     FlashRAG's files under DATA_DIR (default data/flashrag): nq, triviaqa, popqa, bamboogle (test) and
#           hotpotqa, 2wikimultihopqa, musique (dev); or --data a.jsonl b.jsonl (any format `data rag-r1` reads).
# Needs:    the retrieval server at RETRIEVAL_URL (default http://127.0.0.1:8000; eval qa refuses to start without it).
# Settings: --mode sq|mq (default mq): the prompt variant the model was trained with; --limit N: the first N
#           questions of each file; every other `agentic-verl eval qa --help` flag.
# Hardware: 1 GPU for a 7B model (all seven sets, ~51k questions: a few hours with vLLM; --limit 500: ~20 min).
#           CPU: AGENTIC_VERL_DEVICE=cpu bash recipes/rag_r1/eval.sh --limit 8  (SmolLM2-135M via the CPU switch).
# Output:   outputs/eval/rag_r1_<label> (--label, default the model's name; or --out DIR): result.json, table.md,
#           trajectories/ (agentic-verl view).
set -euo pipefail
RECIPES=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$RECIPES/_common/device.sh"
source "$RECIPES/_common/eval.sh"
DATA_DIR=${DATA_DIR:-data/flashrag}

eval_launch qa rag_r1_ --data "$DATA_DIR"/{nq,triviaqa,popqa}/test.jsonl \
    "$DATA_DIR"/{hotpotqa,2wikimultihopqa,musique}/dev.jsonl "$DATA_DIR"/bamboogle/test.jsonl \
    --retrieval-url "${RETRIEVAL_URL:-http://127.0.0.1:8000}" -- "$@"
