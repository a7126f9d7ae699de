"""The "register your own reward" recipe of docs/extending.md, both ways: @REWARDS.register, and a file verl loads."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
from omegaconf import OmegaConf

from agentic_verl.registry import RegistryError
from agentic_verl.rewards import REWARDS, load_reward

# The module a user writes (docs/extending.md shows the same code).
USER_MODULE = textwrap.dedent(
    """\
    from agentic_verl.rewards import REWARDS
    from agentic_verl.rewards.qa import extract_answer


    @REWARDS.register("brevity")
    def brevity(solution_str, ground_truth, extra_info=None, *, max_words: int = 20, **kwargs):
        answer = extract_answer(solution_str)
        if answer is None:
            return {"score": 0.0, "error_type": "brevity:missing_answer"}
        words = len(answer.split())
        return {"score": 1.0 if words <= max_words else max_words / words, "error_type": None}
    """
)

# A verl reward file a user writes: their own compute_score, built from our pieces.
USER_REWARD_FN = textwrap.dedent(
    """\
    from agentic_verl.rewards import load_reward

    _REWARD = load_reward([
        {"name": "qa_em"},
        {"name": "my_rewards:brevity", "weight": 0.1, "kwargs": {"max_words": 3}},
    ])


    def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
        return _REWARD(solution_str, ground_truth, extra_info)
    """
)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_rewards", None)
    REWARDS._entries.pop("brevity", None)  # keep the process-wide registry as other tests expect it


def test_register_with_the_decorator_then_use_the_name_in_yaml(user_module):
    with pytest.raises(RegistryError, match="unknown reward 'brevity'"):
        REWARDS.get("brevity")  # not registered until the user's module is imported
    import my_rewards  # noqa: F401

    assert "brevity" in REWARDS.names()
    reward = load_reward([{"name": "qa_em"}, {"name": "brevity", "weight": 0.5, "kwargs": {"max_words": 2}}])
    result = reward("<answer>Paris in France</answer>", ["Paris"])
    assert result["brevity"] == pytest.approx(2 / 3) and result["qa_em"] == 0.0
    assert result["score"] == pytest.approx(0.5 * 2 / 3)


def test_a_second_function_under_the_same_name_is_refused(user_module):
    import my_rewards  # noqa: F401

    with pytest.raises(RegistryError, match="already registered"):
        REWARDS.register("brevity")(lambda solution_str, ground_truth, extra_info=None: {"score": 0.0})


def test_a_file_reference_needs_no_registration(user_module):
    reward = load_reward([{"name": f"{user_module / 'my_rewards.py'}:brevity", "kwargs": {"max_words": 1}}])
    assert reward("<answer>Paris</answer>", None)["brevity"] == 1.0


def test_a_typo_in_the_users_options_fails_at_load_time(user_module):
    with pytest.raises(ValueError, match="accepted: max_words"):
        load_reward([{"name": "my_rewards:brevity", "kwargs": {"max_word": 3}}])


def test_point_verl_at_a_user_reward_file(user_module):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    reward_file = user_module / "my_reward_fn.py"
    reward_file.write_text(USER_REWARD_FN)
    config = OmegaConf.create(
        {"reward": {"custom_reward_function": {"path": str(reward_file), "name": "compute_score"}}}
    )
    compute_score = get_custom_reward_fn(config)  # verl's own loader, as in its reward managers
    assert importlib.util.find_spec("my_rewards") is not None
    short = compute_score(
        data_source="nq", solution_str="<answer>Paris</answer>", ground_truth=["Paris"], extra_info={}
    )
    assert short["score"] == pytest.approx(1.1) and short["brevity"] == 1.0
    long = compute_score(
        data_source="nq", solution_str="<answer>it is Paris in France</answer>", ground_truth=["Paris"], extra_info={}
    )
    assert long["qa_em"] == 0.0 and long["brevity"] == pytest.approx(3 / 5)
