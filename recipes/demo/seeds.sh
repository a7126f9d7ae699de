#!/usr/bin/env bash
# One method's demo on several seeds (one toy world each), then the table across them (`agentic-verl demo seeds`):
# per seed one row with every stage's score (before / after SFT / after RL), the score by question kind, tool calls
# per question and the truncation rate across the stages, and each stage's seconds; then the mean gain of the last
# stage over the one before it and over the first, with its spread across seeds, beside one question's worth (1/n).
#
#   SEEDS="0 1 2" OUT=outputs/demo_seeds bash recipes/demo/seeds.sh [METHOD]
#
# METHOD:   rag_r1 (default; recipes/demo/run.sh, `make demo`), funreason (recipes/funreason/demo.sh),
#           v2p (recipes/v2p/demo.sh). Each demo writes $OUT/seed<N>/summary.json (`agentic-verl demo summary`).
# Hardware: as the method's demo (2 CPU cores, no GPU, no network; rag_r1 needs ~12 GB RAM at the GRPO stage).
# Runtime:  one demo per seed, one after the other (rag_r1: 16-18 min each on 2 cores, 51 min for 0 1 2; the other
#           demos: see their headers).
# Output:   $OUT/seed<N>/ (each run, with summary.json and report.html), $OUT/seeds.md, $OUT/seeds.html (the table
#           and the plots across seeds; docs/demo_report.md).
# Knobs:    SEEDS (default "0 1 2"), OUT (default outputs/demo_seeds for rag_r1, outputs/demo_seeds_<METHOD>
#           otherwise), DEMO_SCRIPT (run this script instead of the method's demo, e.g. a variant of it); every knob of
#           the demo script passes through.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/demo.sh"     # ROOT, AGENTIC_VERL, demo_fail
cd "$ROOT"

KNOWN="rag_r1 funreason v2p"
(( $# <= 1 )) || demo_fail "usage: SEEDS=\"0 1 2\" OUT=DIR bash recipes/demo/seeds.sh [METHOD]  (METHOD: one of $KNOWN)"
METHOD=${1:-rag_r1}
case "$METHOD" in
    rag_r1)    DEMO=recipes/demo/run.sh;        DEFAULT_OUT=outputs/demo_seeds ;;
    funreason) DEMO=recipes/funreason/demo.sh;  DEFAULT_OUT=outputs/demo_seeds_funreason ;;
    v2p)       DEMO=recipes/v2p/demo.sh;        DEFAULT_OUT=outputs/demo_seeds_v2p ;;
    *) demo_fail "unknown method '$METHOD'; known: $KNOWN" ;;
esac
DEMO=${DEMO_SCRIPT:-$DEMO}
SEEDS=${SEEDS:-0 1 2}
OUT=${OUT:-$DEFAULT_OUT}

[[ -f "$DEMO" ]] || demo_fail "the $METHOD demo script $DEMO does not exist"
[[ -n "${SEEDS// /}" ]] || demo_fail "SEEDS is empty"
RUNS=()
for seed in $SEEDS; do
    [[ "$seed" =~ ^[0-9]+$ ]] || demo_fail "SEEDS must be non-negative integers, got '$seed'"
    RUNS+=("$OUT/seed$seed")
done

for seed in $SEEDS; do
    echo "==================== $METHOD seed $seed -> $OUT/seed$seed"
    SEED=$seed OUT="$OUT/seed$seed" bash "$DEMO"
    [[ -f "$OUT/seed$seed/summary.json" ]] ||
        { echo "seeds.sh: $DEMO did not write $OUT/seed$seed/summary.json (agentic-verl demo summary)" >&2; exit 1; }
done

echo "==================== $METHOD: ${#RUNS[@]} seed(s)"
"$AGENTIC_VERL" demo seeds "${RUNS[@]}" --out "$OUT" --method "$METHOD"
