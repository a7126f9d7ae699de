#!/usr/bin/env bash
# GUI grounding accuracy (V2P, docs/v2p.md): the click lands inside the ground-truth box, on ScreenSpot-v2 and
# ScreenSpot-Pro (ScreenSpot v1 too), per group x text/icon, the published rows beside ours, report.html with every
# click, box and (V2P models) pointer heatmap drawn on the screenshot.
#
#   MODEL_PATH=DIR bash recipes/v2p/eval_screenspot.sh [EVAL SCREENSPOT FLAGS...]
#   MODEL_PATH=DIR bash recipes/v2p/eval_screenspot.sh --data data/ScreenSpot-v2 --threshold 0.5
#
# Model:    MODEL_PATH=DIR: a V2P pointer model (agentic_verl.v2p.model; one forward pass per sample) or any
#           Qwen2.5-VL folder (greedy text click), in-process with transformers; or --endpoint URL --model-name NAME
#           (a Qwen2.5-VL behind `vllm serve`; it answers in pixels of its resized screenshot).
# Data:     local copies in their released layouts (agentic_verl/data/gui_grounding.py) under DATA_DIR (default
#           data): ScreenSpot-v2 and ScreenSpot-Pro, e.g. huggingface-cli download --repo-type dataset
#           OS-Copilot/ScreenSpot-v2 / likaixin/ScreenSpot-Pro; or --data DIR....
# Settings: --max-pixels N (the resize cap; default the processor's, Qwen2.5-VL-7B: 16384*28*28), --limit N (first N
#           samples of each dataset), --report-samples N (screenshots drawn in report.html, default 300), every
#           other `agentic-verl eval screenspot --help` flag.
# Hardware: 1 GPU for a 7B model: ~10 min for ScreenSpot-v2 (1272 samples), ~30 min for ScreenSpot-Pro (1581, up to
#           4K screenshots; --max-pixels caps the resize). CPU: a tiny model and --limit 4 (what the tests run).
# Target:   V2P-7B 92.3 (ScreenSpot-v2) / 50.5 (ScreenSpot-Pro); GUI-Actor-7B 92.1 / 44.6; Qwen2.5-VL-7B 88.8 / 26.8
#           (published).
# Output:   outputs/eval/screenspot_<label> (--label, default the model's name; or --out DIR): result.json,
#           table.md, report.html.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/eval.sh"
DATA_DIR=${DATA_DIR:-data}

eval_launch screenspot screenspot_ --data "$DATA_DIR"/ScreenSpot-{v2,Pro} -- "$@"
