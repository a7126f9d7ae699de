#!/usr/bin/env bash
# GUI grounding accuracy (V2P, docs/methods.md "V2P"): the click lands inside the ground-truth box, on ScreenSpot-v2 and
# ScreenSpot-Pro (ScreenSpot v1 too), per group x text/icon, the published rows beside ours, report.html with every
# click, box and (V2P models) pointer heatmap drawn on the screenshot.
#
# Model:    MODEL_PATH=DIR: a V2P pointer model (agentic_verl.v2p.model; one forward pass per sample) or any
#           Qwen2.5-VL folder (greedy text click), in-process with transformers; or ENDPOINT=URL MODEL_NAME=NAME
#           (a Qwen2.5-VL behind `vllm serve`; it answers in pixels of its resized screenshot).
# Data:     DATA="dir1 dir2": local copies in their released layouts (agentic_verl/data/gui_grounding.py), e.g.
#           huggingface-cli download --repo-type dataset OS-Copilot/ScreenSpot-v2 / likaixin/ScreenSpot-Pro.
# Hardware: 1 GPU for a 7B model: ~10 min for ScreenSpot-v2 (1272 samples), ~30 min for ScreenSpot-Pro (1581, up to
#           4K screenshots; MAX_PIXELS caps the resize). CPU: a tiny model and LIMIT=4 (what the tests run).
# Target:   V2P-7B 92.3 (ScreenSpot-v2) / 50.5 (ScreenSpot-Pro); GUI-Actor-7B 92.1 / 44.6; Qwen2.5-VL-7B 88.8 / 26.8
#           (published).
# Output:   OUT (default outputs/eval/screenspot_<label>): result.json, table.md, report.html.
# Extra `eval screenspot` flags go last: bash recipes/v2p/eval_screenspot.sh --threshold 0.5
set -euo pipefail

MODEL_PATH=${MODEL_PATH:-}
ENDPOINT=${ENDPOINT:-}
MODEL_NAME=${MODEL_NAME:-}
DATA=${DATA:-data/ScreenSpot-v2 data/ScreenSpot-Pro}
MAX_PIXELS=${MAX_PIXELS:-}                      # empty: the processor's (Qwen2.5-VL-7B: 16384*28*28)
LIMIT=${LIMIT:-}                                # first N samples of each dataset
REPORT_SAMPLES=${REPORT_SAMPLES:-300}           # screenshots drawn in report.html
LABEL=${LABEL:-$(basename "${MODEL_NAME:-${MODEL_PATH:-model}}")}
OUT=${OUT:-outputs/eval/screenspot_$LABEL}

if [[ -n "$ENDPOINT" ]]; then
    [[ -n "$MODEL_NAME" ]] || { echo "ENDPOINT needs MODEL_NAME (the served model's name)" >&2; exit 2; }
    SOURCE=(--endpoint "$ENDPOINT" --model-name "$MODEL_NAME")
elif [[ -n "$MODEL_PATH" ]]; then
    SOURCE=(--model "$MODEL_PATH")
else
    echo "set MODEL_PATH=DIR (a V2P or Qwen2.5-VL folder) or ENDPOINT=URL MODEL_NAME=NAME (an OpenAI-compatible server)" >&2
    exit 2
fi
read -r -a DATA_DIRS <<< "$DATA"

exec "${AGENTIC_VERL:-agentic-verl}" eval screenspot "${SOURCE[@]}" --data "${DATA_DIRS[@]}" \
    ${MAX_PIXELS:+--max-pixels "$MAX_PIXELS"} ${LIMIT:+--limit "$LIMIT"} --report-samples "$REPORT_SAMPLES" \
    --label "$LABEL" --out "$OUT" "$@"
