"""The shared pieces of the loops: stop strings on a token stream, layered config, the token-level trajectory."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf

from agentic_verl.agent_loops._common import Trajectory, cut_at_stop, resolve_config

STOPS = ("</search>", "</answer>")


@pytest.mark.parametrize("which", ["qwen", "smol"])
@pytest.mark.parametrize("text,kept,stop", [
    # the first closing tag wins; everything after its token is dropped
    ("<search> a </search> junk </answer>", "<search> a </search>", "</search>"),
    ("<answer> x </answer><search> y </search>", "<answer> x </answer>", "</answer>"),
    # the last token completes the tag (a server that honours `stop` ends there): all of it is kept
    ("<think> t </think>\n<search> a </search>", "<think> t </think>\n<search> a </search>", "</search>"),
    ("</answer>", "</answer>", "</answer>"),
    # no stop: everything is kept
    ("<search> unclosed", "<search> unclosed", None),
    ("", "", None),
])
def test_cut_at_stop(which, text, kept, stop, request):
    tok = request.getfixturevalue(f"{which}_tokenizer")
    ids = tok.encode(text, add_special_tokens=False)
    n, found = cut_at_stop(tok, ids, STOPS)
    assert found == stop
    assert tok.decode(ids[:n]).startswith(kept)
    assert n == len(ids) or not any(s in tok.decode(ids[: n - 1]) for s in STOPS)  # the shortest such prefix


def test_cut_keeps_the_rest_of_the_token_that_completes_the_tag(qwen_tokenizer):
    # Qwen merges ">\n" into one token: the cut is at a token boundary, so the newline stays (no re-tokenising)
    ids = qwen_tokenizer.encode("<search> a </search>\nmore", add_special_tokens=False)
    n, _ = cut_at_stop(qwen_tokenizer, ids, STOPS)
    assert qwen_tokenizer.decode(ids[:n]) == "<search> a </search>\n"


@dataclass
class _Cfg:
    a: int = 1
    b: str = "x"


def test_resolve_config_layers():
    rollout = OmegaConf.create({"custom": {"loop": {"a": 2, "b": "custom"}}})
    assert resolve_config(_Cfg, "loop", rollout, {}, None) == _Cfg(2, "custom")
    assert resolve_config(_Cfg, "loop", rollout, {"b": "yaml"}, {}) == _Cfg(2, "yaml")
    assert resolve_config(_Cfg, "loop", rollout, {"b": "yaml"}, {"loop": {"b": "row"}}) == _Cfg(2, "row")
    assert resolve_config(_Cfg, "loop", OmegaConf.create({"custom": None}), {}, None) == _Cfg()
    with pytest.raises(ValueError, match=r"unknown _Cfg key\(s\) \['c'\] in extra_info.loop; known: \['a', 'b'\]"):
        resolve_config(_Cfg, "loop", rollout, {}, {"loop": {"c": 1}})


def test_trajectory_masks_logprobs_and_budget():
    traj = Trajectory([1, 2], response_length=5)
    traj.add_policy([10, 11], [-0.1, -0.2])
    traj.add_observation([20, 21])
    traj.add_policy([12, 13], [-0.3, -0.4])
    fields = traj.output_fields()
    assert fields["response_ids"] == [10, 11, 20, 21, 12]  # cut to response_length
    assert fields["response_mask"] == [1, 1, 0, 0, 1]
    assert fields["response_logprobs"] == [-0.1, -0.2, 0.0, 0.0, -0.3]
    assert traj.remaining == -1
    traj.add_policy([14], None)  # a turn without logprobs: none for the trajectory
    assert traj.output_fields()["response_logprobs"] is None
