"""Loud reward failures (agentic_verl.rewards.failures): a component that raises is a per-sample metric that reaches
verl's reward_extra_info and the training-step log, and too many exceptions in a row stop the run with the
traceback. Made-up components; verl's own loader and naive reward manager where the wiring is the point."""

from __future__ import annotations

import asyncio
import doctest

import numpy as np
import pytest
from test_reward_fns_verl import REPO, _reward_input, call, load_with_verl, qwen_tokenizer  # noqa: F401, F811 (fixture)

from agentic_verl.rewards import failures
from agentic_verl.rewards.compose import RewardConfigError, load_reward, load_reward_config, verl_compute_score
from agentic_verl.rewards.failures import REWARD_EXCEPTIONS, RewardFailFastError

# A user component with a bug that only real outputs hit: it raises on any output that mentions "boom".
FLAKY = (
    "def flaky(solution_str, ground_truth, extra_info=None, **kw):\n"
    "    if 'boom' in solution_str:\n"
    "        raise KeyError('no such field: boom')\n"
    "    return {'score': 1.0, 'error_type': None, 'n_chars': len(solution_str)}\n"
)


@pytest.fixture(autouse=True)
def fresh_streaks():
    REWARD_EXCEPTIONS.clear()
    yield REWARD_EXCEPTIONS
    REWARD_EXCEPTIONS.clear()


@pytest.fixture()
def flaky_ref(tmp_path):
    path = tmp_path / "flaky.py"
    path.write_text(FLAKY)
    return f"{path}:flaky"


def test_an_exception_is_a_per_sample_metric_with_the_same_keys_on_every_sample(flaky_ref):
    reward = load_reward([{"name": "qa_em"}, {"name": flaky_ref}])
    fine = reward("<answer>Paris</answer>", ["Paris"])
    boom = reward("<answer>Paris</answer> boom", ["Paris"])
    assert fine["reward/flaky/exceptions"] == 0.0 and fine["reward/qa_em/exceptions"] == 0.0
    assert boom["reward/flaky/exceptions"] == 1.0 and boom["reward/qa_em/exceptions"] == 0.0
    assert boom["score"] == 1.0 and boom["flaky"] == 0.0 and boom["error_type"] == "flaky:exception:KeyError"
    assert boom.keys() == fine.keys()  # verl stacks reward_extra_info key by key
    assert boom["flaky/n_chars"] is None and fine["flaky/n_chars"] == len("<answer>Paris</answer>")


@pytest.mark.parametrize("limit, outputs, stops_at", [
    # the third exception in a row stops the run
    (3, ["boom"] * 5, 3),
    # a call that returns resets the count: never three in a row
    (3, ["boom", "boom", "fine", "boom", "boom", "fine"], None),
    # 0 = never stop
    (0, ["boom"] * 40, None),
    # 1: the first exception stops
    (1, ["boom"], 1),
])
def test_consecutive_exceptions_stop_the_run(flaky_ref, limit, outputs, stops_at):
    reward = load_reward({"components": [{"name": flaky_ref}], "max_consecutive_exceptions": limit})
    for i, text in enumerate(outputs, start=1):
        if i == stops_at:
            with pytest.raises(RewardFailFastError) as stopped:
                reward(text, None)
            break
        assert reward(text, None)["reward/flaky/exceptions"] == float(text == "boom")
    else:
        assert stops_at is None
        return
    message = str(stopped.value)
    assert f"component 'flaky' raised {limit} times in a row" in message  # which component, how many
    assert f"max_consecutive_exceptions={limit}" in message and "reward_kwargs.max_consecutive_exceptions" in message
    assert "raise KeyError('no such field: boom')" in message and "KeyError: 'no such field: boom'" in message
    assert isinstance(stopped.value.__cause__, KeyError)
    with pytest.raises(RewardFailFastError):  # tripped: every later sample of this process stops too
        reward("fine", None)


def test_limit_from_the_yaml_and_from_reward_kwargs(flaky_ref, tmp_path):
    config = tmp_path / "reward.yaml"
    config.write_text(f"max_consecutive_exceptions: 2\ncomponents:\n  - name: {flaky_ref}\n")
    assert load_reward_config(config).max_consecutive_exceptions == 2
    assert load_reward([{"name": "qa_em"}]).max_consecutive_exceptions == 16  # the default
    # through verl's loader: reward_kwargs win over the YAML
    compute_score = load_with_verl(str(REPO / "reward_fns/composed.py"),
                                   reward_kwargs={"config": str(config), "max_consecutive_exceptions": 3})
    for _ in range(2):
        assert call(compute_score, "boom", None)["reward/flaky/exceptions"] == 1.0
    with pytest.raises(RewardFailFastError, match="raised 3 times in a row"):
        call(compute_score, "boom", None)


@pytest.mark.parametrize("bad", [-1, 1.5, "16", True])
def test_a_bad_limit_is_a_config_error(bad):
    with pytest.raises(RewardConfigError, match="max_consecutive_exceptions must be an integer >= 0"):
        load_reward({"components": ["qa_em"], "max_consecutive_exceptions": bad})
    with pytest.raises(RewardConfigError, match="max_consecutive_exceptions must be an integer >= 0"):
        verl_compute_score(lambda s, g, e=None: {"score": 0.0})("nq", "x", None, {}, max_consecutive_exceptions=bad)


def test_a_single_reward_entry_counts_and_stops_too(monkeypatch):
    """reward_fns/bfcl_ast.py (verl_compute_score over bfcl_ast) when BFCL's checker has a bug: before, its catch-all
    scored such outputs 0 as `bfcl:internal_error`, visible in no metric."""
    from agentic_verl.rewards.bfcl import reward as bfcl_reward

    functions = [{"name": "add", "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}},
                                                "required": ["a"]}}]
    extra = {"functions": functions, "category": "simple_python"}
    answer = [{"add": {"a": [1]}}]
    compute_score = load_with_verl(str(REPO / "reward_fns/bfcl_ast.py"), reward_kwargs={"max_consecutive_exceptions": 2})
    fine = call(compute_score, "[add(a=1)]", answer, extra)
    assert fine["score"] == 1.0 and fine["reward/bfcl_ast/exceptions"] == 0.0

    def checker_bug(*args, **kwargs):
        raise KeyError("a checker bug")

    monkeypatch.setattr(bfcl_reward, "ast_match", checker_bug)
    broken = call(compute_score, "[add(a=1)]", answer, extra)
    assert broken["score"] == 0.0 and broken["reward/bfcl_ast/exceptions"] == 1.0
    assert broken["error_type"] == "bfcl_ast:exception:KeyError"
    assert broken.keys() == fine.keys() and broken["bfcl_valid"] is None
    with pytest.raises(RewardFailFastError, match="'bfcl_ast' raised 2 times in a row"):
        call(compute_score, "[add(a=1)]", answer, extra)


def test_the_metric_reaches_verls_reward_extra_info_and_the_step_log(flaky_ref, qwen_tokenizer):  # noqa: F811
    """verl's naive reward manager (which our agentic_trace manager extends) puts the key in reward_extra_info; the
    v1 trainer stores that in each trajectory's extra_fields, and our replay buffer (trace_sampler) turns it into the
    step's `reward/<key>/exceptions/mean`; verl's validation reduction logs it as mean@N."""
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.trainer.ppo.reward import get_custom_reward_fn

    import agentic_verl.agent_loops.trace_reward  # noqa: F401  (registers agentic_trace, as the plugin does)
    from agentic_verl.agent_loops.trace_sampler import step_metrics

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "reward_fns/composed.py"), "name": "compute_score",
        "reward_kwargs": {"components": [{"name": "qa_em"}, {"name": flaky_ref}]}}}})
    compute_score = get_custom_reward_fn(config)
    gold = {"target": np.array(["Paris"], dtype=object)}

    async def score_all():
        manager = get_reward_manager_cls("agentic_trace")(config=config, tokenizer=qwen_tokenizer,
                                                           compute_score=compute_score)
        return [await manager.run_single(_reward_input(qwen_tokenizer, text, gold))
                for text in ("<answer>Paris</answer>", "<answer>Paris</answer> boom", "boom", "<answer>Rome</answer>")]

    infos = [result["reward_extra_info"] for result in asyncio.run(score_all())]
    assert [info["reward/flaky/exceptions"] for info in infos] == [0.0, 1.0, 1.0, 0.0]
    assert all(info.keys() == infos[0].keys() for info in infos)
    metrics = step_metrics([{"reward_extra_info": info} for info in infos])
    assert metrics["reward/flaky/exceptions/mean"] == 0.5 and metrics["reward/qa_em/exceptions/mean"] == 0.0
    reduced = process_validation_metrics(["nq"] * 4, ["u"] * 4, {k: [i[k] for i in infos] for k in infos[0]})
    assert reduced["nq"]["reward/flaky/exceptions"]["mean@4"] == 0.5


def test_docstring_examples():
    result = doctest.testmod(failures, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
