"""viewer/group_stats.py: GRPO groups with mixed rewards per step, from the trajectory dumps a run writes."""

from __future__ import annotations

import doctest
import json

import pytest

from agentic_verl.viewer import group_stats
from agentic_verl.viewer.load import load_dumps


def test_docstring_example():
    result = doctest.testmod(group_stats)
    assert result.attempted > 0 and result.failed == 0


def test_groups_per_step_from_dump_files(tmp_path, capsys):
    # two steps x two prompts x three samples; rewards in a separate file, as the reward manager writes them
    trajectories, rewards = [], []
    scores = {(0, 0): [0, 0, 0], (0, 1): [1, 0, 0.5], (1, 0): [1, 1, 1], (1, 1): [0.2, 0.4, 0.2]}
    for (step, prompt), values in scores.items():
        for i, value in enumerate(values):
            rid = f"{step}-{prompt}-{i}"
            trajectories.append({"kind": "trajectory", "request_id": rid, "global_step": step,
                                 "prompt_ids": [7, prompt], "response_ids": [1, 2], "response_mask": [1, 1]})
            rewards.append({"kind": "reward", "request_id": rid, "reward": value})
    trajectories.append({"kind": "trajectory", "request_id": "no-reward", "global_step": 1, "prompt_ids": [9]})
    (tmp_path / "trajectories_1.jsonl").write_text("\n".join(map(json.dumps, trajectories)) + "\n")
    (tmp_path / "trajectories_2.jsonl").write_text("\n".join(map(json.dumps, rewards)) + "\n")
    spread = group_stats.group_spread(load_dumps([str(tmp_path)]).trajectories)
    assert {step: (s["groups"], s["mixed"], s["samples"]) for step, s in spread.items()} == {0: (2, 1, 6), 1: (2, 1, 6)}
    assert spread[0]["mean_reward"] == pytest.approx(0.25)
    assert group_stats.main([str(tmp_path)]) == 0
    assert "weights v1: 1/2 groups with mixed rewards, 6 samples" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="trajectory dump not found"):
        group_stats.main([str(tmp_path / "none")])
