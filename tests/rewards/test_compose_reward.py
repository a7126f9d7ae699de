"""Reward composition: YAML configs, load-time errors, the result dict, robustness at reward time."""

from __future__ import annotations

import math
import textwrap

import pytest

from agentic_verl.rewards.compose import RewardConfigError, check_kwargs, load_reward, load_reward_config

GOOD = "<think>t</think><answer>Paris</answer>"


def test_weighted_sum_and_every_component_in_the_result():
    reward = load_reward([{"name": "qa_em"}, {"name": "format", "weight": 0.1, "kwargs": {"mode": "multi"}}])
    result = reward(GOOD, ["Paris"])
    assert result["score"] == pytest.approx(1.1)
    assert result["qa_em"] == 1.0 and result["format"] == 1.0
    assert result["error_type"] is None and result["format/error_type"] is None
    assert result["format/num_searches"] == 0.0


@pytest.mark.parametrize(
    "solution, score, error_type",
    [
        (GOOD, 1.1, None),  # both pass
        ("<think>t</think><answer>Rome</answer>", 0.1, "qa:wrong_answer"),  # wrong answer, good format
        ("<answer>Paris</answer>", 1.0, "format:missing_think"),  # right answer, bad format
        ("Paris", 0.0, "qa:missing_answer"),  # both fail: the first component's error is reported
    ],
)
def test_first_failing_component_sets_error_type(solution, score, error_type):
    reward = load_reward([{"name": "qa_em"}, {"name": "format", "weight": 0.1}])
    result = reward(solution, ["Paris"])
    assert result["score"] == pytest.approx(score)
    assert result["error_type"] == error_type


def test_result_keys_do_not_depend_on_the_output():
    # verl stacks reward_extra_info per key across a batch: every sample must carry the same keys
    reward = load_reward([{"name": "qa_f1"}, {"name": "format"}, {"name": "gui_click_in_box"}])
    keys = {frozenset(reward(text, ["Paris"])) for text in (GOOD, "", "<answer>", "(1, 2)", "x" * 1000)}
    assert len(keys) == 1


def test_yaml_config_and_the_shipped_example(tmp_path):
    path = tmp_path / "reward.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            components:
              - name: qa_f1
                weight: 0.5
              - name: qa_em
                key: em_eval
                kwargs: {normalizer: rag_r1_eval}
            """
        )
    )
    result = load_reward_config(path)("<answer>New_York City</answer>", ["New York City"])
    assert result["qa_f1"] == pytest.approx(0.4)  # squad normaliser: "newyork city" vs "new york city"
    assert result["em_eval"] == 1.0  # eval normaliser: "new york city" on both sides
    assert result["score"] == pytest.approx(0.5 * 0.4 + 1.0)

    shipped = load_reward_config("reward_fns/configs/rag_r1_em_format.yaml")
    assert [c.key for c in shipped.components] == ["qa_em", "format"]
    assert [c.weight for c in shipped.components] == [1.0, 0.1]


def test_module_and_file_references(tmp_path):
    user_file = tmp_path / "my_reward.py"
    user_file.write_text(
        "def length_bonus(solution_str, ground_truth, extra_info=None, **kw):\n"
        "    return {'score': min(len(solution_str), 10) / 10, 'error_type': None}\n"
    )
    reward = load_reward(
        [
            {"name": "agentic_verl.rewards.qa:qa_cover_em"},  # module:attr, key = the attribute
            {"name": f"{user_file}:length_bonus", "weight": 2.0},  # file.py:attr
        ]
    )
    result = reward("<answer>in Paris</answer>", ["Paris"])
    assert result["qa_cover_em"] == 1.0 and result["length_bonus"] == 1.0
    assert result["score"] == pytest.approx(3.0)


@pytest.mark.parametrize(
    "spec, message",
    [
        ([{"name": "qa_exact"}], "known: .*qa_em"),  # unknown name: the error lists the known ones
        ([{"name": "qa_em", "wieght": 1}], "unknown fields"),  # a typo in a field
        ([{"name": "qa_em", "weight": "one"}], "finite number"),  # a weight that is not a number
        ([{"name": "qa_em", "weight": math.inf}], "finite number"),  # an infinite weight
        ([{"name": "qa_em", "weight": True}], "finite number"),  # a bool is not a weight
        ([{"name": "qa_em", "kwargs": {"normaliser": "squad"}}], r"unexpected kwargs \['normaliser'\]"),  # typo
        ([{"name": "qa_em", "kwargs": {"normalizer": "bogus"}}], "trial call.*unknown normalizer"),  # bad value
        ([{"name": "format", "kwargs": {"mode": "parallel"}}], "unknown format mode"),  # bad value
        ([{"name": "gui_click_in_box", "kwargs": {"coord_system": "pixels"}}], "unknown coord_system"),  # bad value
        ([{"name": "qa_em"}, {"name": "qa_em"}], "duplicate component keys"),  # same key twice
        ([{"name": "qa_em", "key": "score"}], "bad key"),  # a key that would clobber the total
        ([], "non-empty list"),  # nothing to compose
        ({"components": [{"name": "qa_em"}], "extra": 1}, "only 'components'"),  # unknown top-level key
        ([42], "expected a mapping"),  # not a component
        ([{"name": "no_such_module_xyz:fn"}], "cannot import"),  # a bad module reference
        ([{"name": "/nonexistent/file.py:fn"}], "does not exist"),  # a bad file reference
    ],
)
def test_bad_configs_fail_at_load_time(spec, message):
    with pytest.raises(RewardConfigError, match=message):
        load_reward(spec)


def test_bad_yaml_files(tmp_path):
    with pytest.raises(RewardConfigError, match="cannot read"):
        load_reward_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("components: [\n")
    with pytest.raises(RewardConfigError, match="not valid YAML"):
        load_reward_config(broken)
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("components:\n  - name: nope\n")
    with pytest.raises(RewardConfigError, match=r"unknown.yaml: component 0 \(nope\).*known:"):
        load_reward_config(unknown)


def test_a_component_that_misbehaves_at_reward_time_does_not_stop_training(tmp_path):
    user_file = tmp_path / "flaky.py"
    user_file.write_text(
        "def flaky(solution_str, ground_truth, extra_info=None, **kw):\n"
        "    if 'boom' in solution_str:\n"
        "        raise RuntimeError('boom')\n"
        "    if 'nan' in solution_str:\n"
        "        return {'score': float('nan'), 'error_type': None}\n"
        "    return {'score': 1.0, 'error_type': None, 'detail': [1, 2]}\n"
    )
    reward = load_reward([{"name": "qa_em"}, {"name": f"{user_file}:flaky"}])
    boom = reward("<answer>Paris</answer> boom", ["Paris"])
    assert boom["score"] == 1.0 and boom["flaky"] == 0.0 and boom["error_type"] == "flaky:exception:RuntimeError"
    nan = reward("<answer>Paris</answer> nan", ["Paris"])
    assert nan["score"] == 1.0 and nan["error_type"] == "flaky:non_finite_score"
    fine = reward("<answer>Paris</answer>", ["Paris"])
    assert fine["score"] == 2.0 and "flaky/detail" not in fine  # non-scalar outputs stay out of the logs


def test_check_kwargs_rules():
    def explicit(solution_str, ground_truth, extra_info=None, *, alpha=1, **kwargs):
        return {}

    def free(solution_str, ground_truth, extra_info=None, **kwargs):
        return {}

    check_kwargs(explicit, {"alpha": 2}, what="explicit")  # a declared option
    with pytest.raises(RewardConfigError, match="accepted: alpha"):
        check_kwargs(explicit, {"beta": 2}, what="explicit")  # named options are checked despite **kwargs
    check_kwargs(free, {"anything": 1}, what="free")  # only **kwargs: anything goes
