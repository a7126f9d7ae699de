#!/usr/bin/env bash
# The demo (recipes/demo/run.sh) on several toy worlds, one per seed, and the table the README's "Demo" section
# quotes: held-out EM before SFT / after SFT / after GRPO per seed, the RL gain, and the size of one question.
#
# Hardware: as the demo (2 CPU cores, ~12 GB RAM at the GRPO stage, no GPU, no network).
# Runtime:  one `make demo` per seed, one after the other (16-18 min each on 2 cores; 51 min for 0 1 2).
# Knobs:    SEEDS (default "0 1 2"), OUT (default outputs/demo_seeds); every knob of run.sh passes through.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

SEEDS=${SEEDS:-0 1 2}
OUT=${OUT:-outputs/demo_seeds}

for seed in $SEEDS; do
    echo "==================== seed $seed -> $OUT/seed$seed"
    SEED=$seed OUT="$OUT/seed$seed" bash recipes/demo/run.sh
done

"$ROOT/.venv/bin/python" - "$OUT" $SEEDS <<'PY' | tee "$OUT/seeds.md"
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
rows = []
for seed in seeds:
    base, sft, rl = (json.load(open(f"{out}/seed{seed}/eval/{stage}/result.json"))["summary"]
                     for stage in ("0_base", "1_sft", "2_grpo"))
    hop = lambda s, h: s["em_by_hops"].get(h, {}).get("em", float("nan"))
    rows.append({"seed": seed, "n": sft["n"], "before": base["em"], "sft": sft["em"], "rl": rl["em"],
                 "gain": rl["em"] - sft["em"], "questions": round((rl["em"] - sft["em"]) * sft["n"]),
                 "hop1": (hop(sft, "1"), hop(rl, "1")), "hop2": (hop(sft, "2"), hop(rl, "2")),
                 "searches": (sft["searches_per_question"], rl["searches_per_question"])})
arrow = lambda pair: f"{pair[0]:.3f} -> {pair[1]:.3f}"
print("| seed | n | before SFT | after SFT | after GRPO | GRPO - SFT | in questions | EM 1-hop | EM 2-hop | searches/q |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['seed']} | {r['n']} | {r['before']:.3f} | {r['sft']:.3f} | {r['rl']:.3f} | {r['gain']:+.3f} | "
          f"{r['questions']:+d} | {arrow(r['hop1'])} | {arrow(r['hop2'])} | {r['searches'][0]:.2f} -> {r['searches'][1]:.2f} |")
mean = lambda key: statistics.fmean(r[key] for r in rows)
print(f"| mean | | {mean('before'):.3f} | {mean('sft'):.3f} | {mean('rl'):.3f} | {mean('gain'):+.3f} | | | | |")
print(f"\none question = {1 / rows[0]['n']:.3f} EM")
PY
