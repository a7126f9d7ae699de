"""GiGPO (`algorithm.adv_estimator=gigpo`) against a plain reference written from the paper's equations (arXiv
2505.10978, section 3), on generated batches: groups of trajectories with several turns, observation gaps, anchor
states drawn from a small set (so that step groups form) and one final reward; its special cases (a step group of
one contributes 0, so all-distinct anchors give verl's GRPO exactly); registered by a bare `import verl` and called
through verl's own `compute_advantage`."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from agentic_verl.training.gigpo import (
    START,
    GigpoInputError,
    GigpoSettings,
    gigpo_advantages,
    row_anchors,
    step_advantages,
)

EPS = 1e-6


# -- the reference: the paper's equations, one trajectory and one turn at a time -------------------------------------
def _mean_std(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)  # unbiased, as torch.std and verl's GRPO
    return mean, math.sqrt(var)


def reference(trajectories: list[dict], omega: float, gamma: float, step_norm: str) -> list[list[float]]:
    """Per trajectory, per turn: A_E + omega * A_S. A trajectory: {"uid", "turn_rewards" [r_1..r_T], "anchors"}."""
    returns = []  # R_t = sum_{k >= t} gamma^(k - t) r_k
    for tr in trajectories:
        r = tr["turn_rewards"]
        returns.append([sum(gamma ** (k - t) * r[k] for k in range(t, len(r))) for t in range(len(r))])
    episode = []  # A_E = (R(tau) - mean) / (std + eps) over the trajectories of one uid; verl: a group of one -> R
    for tr in trajectories:
        group = [sum(o["turn_rewards"]) for o in trajectories if o["uid"] == tr["uid"]]
        total = sum(tr["turn_rewards"])
        mean, std = _mean_std(group) if len(group) > 1 else (0.0, 1.0)
        episode.append((total - mean) / (std + EPS))
    out = []
    for i, tr in enumerate(trajectories):
        row = []
        for t, anchor in enumerate(tr["anchors"][:len(tr["turn_rewards"])]):
            group = [returns[j][k] for j, o in enumerate(trajectories) if o["uid"] == tr["uid"]
                     for k, a in enumerate(o["anchors"][:len(o["turn_rewards"])]) if a == anchor]
            if len(group) < 2:
                step = 0.0  # the paper: a step group of one gives no relative signal
            else:
                mean, std = _mean_std(group)
                step = (returns[i][t] - mean) / ((std + EPS) if step_norm == "std" else 1.0)
            row.append(episode[i] + omega * step)
        out.append(row)
    return out


# -- generated batches -------------------------------------------------------------------------------------------
@st.composite
def batches(draw, distinct: bool = False):
    """(trajectories, token_level_rewards, response_mask, index, anchors): each turn a run of policy tokens, most
    followed by observation tokens; the score on the last token; anchors from a small set (turn 1: START)."""
    trajectories, width = [], 0
    for group in range(draw(st.integers(1, 3))):
        for _ in range(draw(st.integers(1, 5))):
            turns = draw(st.integers(1, 4))
            lengths = [draw(st.integers(1, 3)) for _ in range(turns)]
            gaps = [draw(st.integers(1, 2)) for _ in range(turns - 1)] + [draw(st.integers(0, 2))]
            score = draw(st.sampled_from([0.0, 0.5, 1.0, -1.0, 0.25]))
            anchors = [START] + [draw(st.sampled_from("abc")) for _ in range(turns - 1)]
            if distinct:
                anchors = [f"{group}-{len(trajectories)}-{t}" for t in range(turns)]
            trajectories.append({"uid": f"u{group}", "lengths": lengths, "gaps": gaps, "score": score,
                                 "anchors": anchors})
            width = max(width, sum(lengths) + sum(gaps))
    width += draw(st.integers(0, 3))  # padding after the response
    rewards = torch.zeros(len(trajectories), width)
    mask = torch.zeros(len(trajectories), width)
    for row, tr in enumerate(trajectories):
        position = 0
        for length, gap in zip(tr["lengths"], tr["gaps"], strict=True):
            mask[row, position:position + length] = 1
            position += length + gap
        rewards[row, position - 1] = tr["score"]  # verl: the score on the response's last token
        tr["turn_rewards"] = [0.0] * (len(tr["lengths"]) - 1) + [tr["score"]]
    index = np.array([tr["uid"] for tr in trajectories], dtype=object)
    return trajectories, rewards, mask, index, [tr["anchors"] for tr in trajectories]


def per_turn(advantages: torch.Tensor, mask: torch.Tensor, row: int) -> list[float]:
    """The advantage of each turn of a row (constant over the turn's tokens, which the test also checks)."""
    values, position, inside = [], 0, False
    for position in range(mask.shape[1]):
        if mask[row, position] and not inside:
            values.append(float(advantages[row, position]))
        if mask[row, position]:
            assert float(advantages[row, position]) == values[-1]
        else:
            assert float(advantages[row, position]) == 0.0  # observations and padding get nothing
        inside = bool(mask[row, position])
    return values


@settings(max_examples=300, deadline=None, derandomize=True)
@given(batch=batches(), omega=st.sampled_from([0.0, 0.5, 1.0, 2.0]), gamma=st.sampled_from([1.0, 0.95, 0.5]),
       step_norm=st.sampled_from(["std", "none"]))
def test_gigpo_equals_the_papers_equations(batch, omega, gamma, step_norm):
    trajectories, rewards, mask, index, anchors = batch
    config = GigpoSettings(omega=omega, gamma=gamma, step_norm=step_norm)
    advantages, returns = gigpo_advantages(rewards, mask, index, anchors, config)
    expected = reference(trajectories, omega, gamma, step_norm)
    for row in range(len(trajectories)):
        assert per_turn(advantages, mask, row) == pytest.approx(expected[row], rel=1e-4, abs=1e-4)
    assert torch.equal(advantages, returns)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(batch=batches(distinct=True), omega=st.sampled_from([0.5, 1.0]))
def test_all_distinct_anchor_states_give_grpo_exactly(batch, omega):
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    _, rewards, mask, index, anchors = batch
    gigpo, _ = gigpo_advantages(rewards, mask, index, anchors, GigpoSettings(omega=omega))
    grpo, _ = compute_grpo_outcome_advantage(rewards, mask, index)
    assert torch.equal(gigpo, grpo)
    assert not step_advantages(rewards, mask, index, anchors, GigpoSettings()).any()


def test_a_shared_state_ranks_the_turns_that_start_from_it():
    """Two trajectories reach state "s" at turn 2; the one that then succeeds gets the higher step advantage."""
    mask = torch.tensor([[1, 0, 1, 0], [1, 0, 1, 0], [1, 0, 0, 0]], dtype=torch.float32)
    rewards = torch.tensor([[0, 0, 0, 1.0], [0, 0, 0, 0], [0, 0, 0, 0]])
    index = np.array(["q", "q", "q"], dtype=object)
    step = step_advantages(rewards, mask, index, [[START, "s"], [START, "s"], [START]], GigpoSettings(gamma=1.0))
    assert step[0, 2] > 0 > step[1, 2]  # the step group {s}: returns 1 and 0
    assert step[0, 0] > 0 and step[1, 0] < 0 and step[2, 0] < 0  # the start group: all three


def test_registered_by_import_verl_and_called_through_verls_compute_advantage():
    code = ("import verl\nfrom verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
            "print(get_adv_estimator_fn('gigpo').__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip().endswith("agentic_verl.training.gigpo")

    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    mask = torch.tensor([[1, 1, 0, 1], [1, 0, 1, 0]], dtype=torch.float32)
    rewards = torch.tensor([[0, 0, 0, 1.0], [0, 0, 0, 0.0]])
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array(["q", "q"], dtype=object)})
    config = OmegaConf.create({"norm_adv_by_std_in_grpo": True, "gigpo": {"omega": 1.0, "gamma": 1.0}})
    with row_anchors([[START, "s"], [START, "s"]]):
        out = compute_advantage(data, adv_estimator="gigpo", config=config)
    expected, _ = gigpo_advantages(rewards, mask, data.non_tensor_batch["uid"], [[START, "s"], [START, "s"]],
                                   GigpoSettings(omega=1.0, gamma=1.0))
    assert torch.equal(out.batch["advantages"], expected)


def test_missing_anchors_and_bad_settings_are_loud():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    estimator = get_adv_estimator_fn("gigpo")
    mask = torch.tensor([[1, 0, 1]], dtype=torch.float32)
    rewards = torch.zeros(1, 3)
    index = np.array(["q"], dtype=object)
    with pytest.raises(GigpoInputError, match="anchor states.*row_anchors"):  # outside verl's trainer, no anchors
        estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=OmegaConf.create({}))
    with row_anchors([[START]]), pytest.raises(GigpoInputError, match="2 policy turns but 1 anchor"):
        estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=OmegaConf.create({}))
    with row_anchors([None]), pytest.raises(GigpoInputError, match="does not record `gigpo_anchors`"):
        estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=OmegaConf.create({}))
    with row_anchors([[START, "s"]]), pytest.raises(GigpoInputError, match=r"unknown algorithm.gigpo key\(s\) \['w'\]"):
        estimator(token_level_rewards=rewards, response_mask=mask, index=index,
                  config=OmegaConf.create({"gigpo": {"w": 1}}))
    with pytest.raises(GigpoInputError, match="step_norm"):
        GigpoSettings(step_norm="max")


@pytest.mark.parametrize("by_std, step_norm, expected", [(True, None, "std"), (False, None, "none"),
                                                         (False, "std", "std"), (True, "none", "none")])
def test_step_norm_follows_the_episode_terms_unless_set(by_std, step_norm, expected):
    """Unset, the step term is normalised as verl normalises the episode term (algorithm.norm_adv_by_std_in_grpo):
    on a single-turn task (every turn starts from the prompt) GiGPO is then exactly (1 + omega) x GRPO."""
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, get_adv_estimator_fn

    section = {} if step_norm is None else {"step_norm": step_norm}
    config = OmegaConf.create({"norm_adv_by_std_in_grpo": by_std, "gigpo": section})
    assert GigpoSettings.from_config(config).step_norm == expected
    if step_norm is None:
        mask, rewards = torch.ones(4, 3), torch.zeros(4, 3)
        rewards[0, 2] = 1.0
        index = np.array(["q"] * 4, dtype=object)
        with row_anchors([[START]] * 4):
            gigpo, _ = get_adv_estimator_fn("gigpo")(token_level_rewards=rewards, response_mask=mask, index=index,
                                                     config=config)
        grpo, _ = compute_grpo_outcome_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=by_std)
        assert torch.allclose(gigpo, 2 * grpo, atol=1e-5)
