"""The bfcl_ast reward component and its verl entry (reward_fns/bfcl_ast.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.bfcl import bfcl_ast, error_type_of
from agentic_verl.rewards.compose import RewardConfigError

FUNCTIONS = [{"name": "add", "parameters": {"type": "dict", "required": ["a", "b"],
              "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]  # fmt: skip
ANSWER = [{"add": {"a": [1], "b": [2]}}]
EXTRA = {"functions": FUNCTIONS, "category": "simple_python"}
REPO = Path(__file__).resolve().parents[3]

CASES = [
    # the gold call, ground truth as objects
    ("[add(a=1, b=2)]", ANSWER, EXTRA, 1.0, None, None),
    # ground truth and functions as JSON strings (as stored in parquet)
    ("[add(a=1, b=2)]", json.dumps(ANSWER), {**EXTRA, "functions": json.dumps(FUNCTIONS)}, 1.0, None, None),
    # the whole possible-answer record {"id", "ground_truth"}
    ("[add(a=1, b=2)]", {"id": "x", "ground_truth": ANSWER}, EXTRA, 1.0, None, None),
    # a missing parameter
    ("[add(a=1)]", ANSWER, EXTRA, 0.0, "bfcl:missing_required", "simple_function_checker:missing_required"),
    # a wrong value
    ("[add(a=1, b=3)]", ANSWER, EXTRA, 0.0, "bfcl:value_error", "value_error:others"),
    # a wrong type
    ("[add(a=1, b='2')]", ANSWER, EXTRA, 0.0, "bfcl:type_error", "type_error:simple"),
    # not a call
    ("3", ANSWER, EXTRA, 0.0, "bfcl:decode_failed", "ast_decoder:decoder_failed"),
    # garbage ground truth
    ("[add(a=1, b=2)]", "not json", EXTRA, 0.0, "bfcl:bad_ground_truth", "bfcl:bad_ground_truth"),
    # missing ground truth
    ("[add(a=1, b=2)]", None, EXTRA, 0.0, "bfcl:bad_ground_truth", "bfcl:bad_ground_truth"),
    # no extra_info at all: no functions to check against
    ("[add(a=1, b=2)]", ANSWER, None, 0.0, "bfcl:bad_ground_truth", "bfcl:bad_ground_truth"),
    # irrelevance needs no ground truth
    ("No tool fits.", None, {"functions": FUNCTIONS, "category": "irrelevance"}, 1.0, None, None),
    # irrelevance with a call
    ("[add(a=1, b=2)]", None, {"functions": FUNCTIONS, "category": "irrelevance"}, 0.0, "bfcl:call_when_irrelevant",
     "irrelevance_error:decoder_success"),
]


@pytest.mark.parametrize(("output", "ground_truth", "extra", "score", "error_type", "bfcl_error_type"), CASES)
def test_component(output, ground_truth, extra, score, error_type, bfcl_error_type):
    result = bfcl_ast(output, ground_truth, extra)
    assert result["score"] == score
    assert result["error_type"] == error_type
    assert result["bfcl_error_type"] == bfcl_error_type


def test_numpy_ground_truth_from_parquet():
    # parquet readers hand back numpy object arrays
    assert bfcl_ast("[add(a=1, b=2)]", np.array(ANSWER, dtype=object), EXTRA)["score"] == 1.0


def test_registered_under_its_name():
    assert REWARDS.get("bfcl_ast") is bfcl_ast


def test_error_types_are_namespaced():
    for bfcl_type in ["type_error:nested", "value_error:dict_key", "dict_checker:unclear", "ast_decoder:decoder_failed",
                      "parallel_function_checker_no_order:cannot_find_match", "relevance_error:decoder_failed"]:
        assert error_type_of(bfcl_type).startswith("bfcl:")
    assert error_type_of(None) is None


def load_with_verl(reward_kwargs: dict | None = None):
    """reward_fns/bfcl_ast.py through verl's own custom-reward loader (what every reward manager receives)."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "reward_fns" / "bfcl_ast.py"), "name": "compute_score",
        "reward_kwargs": reward_kwargs or {}}}})  # fmt: skip
    return get_custom_reward_fn(config)


def test_verl_entry_delegates():
    fn = load_with_verl()
    # called with keywords, as verl's reward managers do
    result = fn(data_source="bfcl", solution_str="[add(a=1, b=2)]", ground_truth=json.dumps(ANSWER), extra_info=EXTRA)
    assert result["score"] == 1.0 and result["bfcl_valid"] is True
    assert fn(data_source="bfcl", solution_str="[add(a=2, b=2)]", ground_truth=ANSWER, extra_info=EXTRA)["score"] == 0.0


def test_verl_entry_options():
    # a default category for rows whose extra_info lacks one
    fn = load_with_verl({"category": "irrelevance"})
    assert fn(data_source="bfcl", solution_str="no call", ground_truth=None, extra_info={"functions": FUNCTIONS})[
        "score"] == 1.0  # fmt: skip
    # a misspelt option is a config error, not a silent default
    typo = load_with_verl({"categroy": "irrelevance"})
    with pytest.raises(RewardConfigError, match="accepted: category, language"):
        typo(data_source="bfcl", solution_str="x", ground_truth=None, extra_info={})


def test_parquet_shaped_rows_with_nested_numpy_arrays():
    # pandas/pyarrow hand back nested lists as numpy arrays, inside dicts too
    functions = [{"name": "add", "parameters": {"type": "dict", "required": np.array(["a", "b"], dtype=object),
                  "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]  # fmt: skip
    answer = np.array([{"add": {"a": np.array([1]), "b": np.array([2])}}], dtype=object)
    extra = {"functions": np.array(functions, dtype=object), "category": "simple_python"}
    assert bfcl_ast("[add(a=1, b=2)]", answer, extra)["score"] == 1.0
    assert bfcl_ast("[add(a=1, b=3)]", answer, extra)["error_type"] == "bfcl:value_error"


@pytest.mark.parametrize("bug", [TypeError, ValueError, AttributeError])
def test_a_checker_bug_raises_instead_of_scoring_bad_ground_truth(monkeypatch, bug):
    """Only reading the row is guarded: an exception inside ast_match (a bug, since it judges malformed ground truth
    itself) reaches the reward wrappers, which count it as reward/bfcl_ast/exceptions, rather than becoming a
    silent bfcl:bad_ground_truth zero."""
    import agentic_verl.rewards.bfcl.reward as reward_module

    def broken(*args, **kwargs):
        raise bug("checker bug")

    monkeypatch.setattr(reward_module, "ast_match", broken)
    with pytest.raises(bug, match="checker bug"):
        bfcl_ast("[add(a=1, b=2)]", ANSWER, EXTRA)
