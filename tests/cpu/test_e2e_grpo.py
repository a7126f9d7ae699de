"""End to end on CPU: the rag_r1 recipes through verl's real Ray trainer with our CPU platform and `hf` rollout,
the rag_r1 agent loop and a real retrieval server; weight sync verified, plus its negative control."""

from __future__ import annotations

import pytest
from cpu_backend_helpers import HERE, RecipeRun, run_recipe, write_rag_r1_data

pytestmark = pytest.mark.slow

# Small enough for 2 shared cores: 2 questions x 2 samples, one search turn + the final answer turn.
SMALL = {
    "TRAIN_BATCH_SIZE": "2", "PPO_MINI_BATCH_SIZE": "2", "MICRO_BATCH_SIZE": "2", "ROLLOUT_N": "2",
    "MAX_PROMPT_LENGTH": "512", "MAX_RESPONSE_LENGTH": "96", "MAX_TURNS": "1", "RAG_MODE": "sq",
}
AGENT_OVERRIDES = [
    "+actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn=24",
    "+actor_rollout_ref.rollout.custom.rag_r1.max_obs_length=64",
    f"reward.custom_reward_function.path={HERE / 'varied_reward.py'}",
]
# verl's rollout-vs-trainer comparison when both hold the same weights (both fp32 on CPU, see device.sh). The tiny
# random model spreads its probability over 151k tokens, so probabilities are ~1e-5 and gaps tiny either way; the
# ratios below are what separates "synced" from "not synced" (seen: 1.6e-11 vs 3.2e-6).
SYNCED_DIFF_MAX = 1e-9  # seen ~1.6e-11 with sync
SYNCED_MIN_CORR = 0.999  # seen 1.0 with sync; 0.11 at step 2 without
SYNCED_MAX_K3_KL = 1e-5  # seen 0.0 with sync; 0.015 at step 2 without


def _engine_checksum(model_dir) -> str:
    from agentic_verl.cpu.engine import HFGenerationEngine

    return HFGenerationEngine(model_dir).param_checksum()


def _assert_ran(run: RecipeRun, steps: int) -> None:
    assert run.returncode == 0, run.tail()
    assert [m["training/global_step"] for m in run.metrics] == list(range(1, steps + 1)), run.tail()


@pytest.fixture(scope="module")
def rag_r1_data(tmp_path_factory):
    return write_rag_r1_data(tmp_path_factory.mktemp("rag_r1_data"))


def test_grpo_two_steps_with_rag_r1_and_verified_weight_sync(tiny_model_dir, retrieval_server, rag_r1_data,
                                                                    tmp_path):
    train, test = rag_r1_data
    run = run_recipe("rag_r1/grpo.sh", tmp_path, {
        **SMALL, "MODEL_PATH": str(tiny_model_dir), "TRAIN_FILE": str(train), "VAL_FILE": str(test),
        "RETRIEVAL_URL": retrieval_server.url, "TOTAL_TRAINING_STEPS": "2",
    }, [*AGENT_OVERRIDES, "trainer.test_freq=2"])  # validate (greedy) after step 2: the agent metrics live there
    print(f"grpo e2e: {run.seconds:.1f}s; step times {[round(m['timing_s/step'], 1) for m in run.metrics]}")
    _assert_ran(run, steps=2)

    # The actor learned: non-zero gradients, and the weights the rollout server received changed every step.
    assert all(m["actor/grad_norm"] > 0 for m in run.metrics)
    assert [s["global_steps"] for s in run.syncs] == [0, 1, 2]
    checksums = [s["checksum"] for s in run.syncs]
    assert len(set(checksums)) == 3, checksums
    # The initial sync delivered exactly the model folder's weights (the server itself started from random ones).
    assert checksums[0] == _engine_checksum(tiny_model_dir)
    assert all(s["tensors"] > 0 for s in run.syncs)

    # The rollout generated with the synced weights: verl's own comparison of rollout vs trainer log-probs.
    for m in run.metrics:
        assert m["training/rollout_probs_diff_valid"] == 1.0
        assert m["training/rollout_probs_diff_max"] < SYNCED_DIFF_MAX, m["training/rollout_probs_diff_max"]
        assert m["training/rollout_actor_probs_pearson_corr"] > SYNCED_MIN_CORR, m
        assert m["rollout_corr/k3_kl"] < SYNCED_MAX_K3_KL, m

    # Step metrics: reward and the rag_r1 multi-turn structure; the agentic_trace reward manager's per-trajectory
    # metrics (tool calls, failure taxonomy) reach verl's logs through validation (val-aux/<source>/agent/...).
    for m in run.metrics:
        assert "critic/score/mean" in m and "critic/rewards/mean" in m
        assert m["num_turns/min"] >= 2  # prompt + at least one generated turn
    # The random tiny policy never writes a `<search>` tag, so the live retrieval server gets no query in this run
    # (num_searches is 0 and no_call counts instead); the search path itself is covered by tests/agent_loops.
    validation = {k: v for k, v in run.metrics[-1].items() if k.startswith("val-")}
    assert any("/agent/failure/" in k for k in validation), sorted(validation)
    assert any("/agent/num_searches/" in k for k in validation), sorted(validation)


def test_ppo_with_critic_negative_control_without_weight_sync(tiny_model_dir, retrieval_server, rag_r1_data,
                                                              tmp_path):
    """PPO (GAE critic) with every sync after the initial load skipped: verl's rollout/trainer comparison, tight at
    step 1 (same weights), must break at step 2 once the actor has moved and the rollout has not."""
    train, test = rag_r1_data
    run = run_recipe("rag_r1/ppo.sh", tmp_path, {
        **SMALL, "ROLLOUT_N": "1", "MODEL_PATH": str(tiny_model_dir), "TRAIN_FILE": str(train), "VAL_FILE": str(test),
        "RETRIEVAL_URL": retrieval_server.url, "TOTAL_TRAINING_STEPS": "2", "AGENTIC_VERL_SKIP_WEIGHT_SYNC": "1",
    }, [*AGENT_OVERRIDES, "critic.optim.lr=1e-3"])
    print(f"ppo negative control: {run.seconds:.1f}s; step times {[round(m['timing_s/step'], 1) for m in run.metrics]}")
    _assert_ran(run, steps=2)
    assert all("critic/vf_loss" in m and "critic/values/mean" in m for m in run.metrics)
    assert [s["global_steps"] for s in run.syncs] == [0]  # only the initial load reached the server
    first, second = run.metrics
    # step 1: the rollout still has the actor's weights (the initial sync happened)
    assert first["training/rollout_probs_diff_max"] < SYNCED_DIFF_MAX
    assert first["training/rollout_actor_probs_pearson_corr"] > SYNCED_MIN_CORR
    assert first["rollout_corr/k3_kl"] < SYNCED_MAX_K3_KL
    # step 2: the actor moved, the rollout did not
    assert second["training/rollout_probs_diff_max"] > max(100 * SYNCED_DIFF_MAX, 1000 * first["training/rollout_probs_diff_max"])
    assert second["training/rollout_actor_probs_pearson_corr"] < SYNCED_MIN_CORR
    assert second["rollout_corr/k3_kl"] > max(SYNCED_MAX_K3_KL, 10 * first["rollout_corr/k3_kl"])
