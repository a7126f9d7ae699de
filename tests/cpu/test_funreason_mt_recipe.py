"""recipes/funreason_mt: grpo.sh and sft.sh, with and without the CPU switch, yield overrides that verl's own hydra
configs accept (run for real with a stand-in `python3`/`torchrun` that records the launch, as test_recipes.py);
`agentic-verl preflight bfcl-mt` passes a good setup and refuses missing data, a missing model, BFCL's own questions
as training rows, a dead server and a missing .venv-bfcl; grpo.sh without BFCL_ENV_URL starts the environment
server around the launch, refuses before starting it, and leaves nothing running. The rows are hand-written tasks
(bfcl_mt_tasks.py), never BFCL's questions; their ground truths pass bfcl-eval's checker on the live server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bfcl_mt_tasks import TASKS, rows, write_rows
from cpu_backend_helpers import REPO
from test_recipe_configs import compose_sft_launch
from test_recipes import _compose, _recorded_overrides

from agentic_verl.bfcl_env.venv import available, ensure_venv

GRPO, SFT = "funreason_mt/grpo.sh", "funreason_mt/sft.sh"
ENV_URL_KEY = "+actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url"
requires_venv = pytest.mark.skipif(not available(), reason="no .venv-bfcl (make bfcl-venv)")


@pytest.fixture(scope="module")
def live_env(tmp_path_factory):
    if not available():
        pytest.skip("no .venv-bfcl (make bfcl-venv)")
    ensure_venv()
    from agentic_verl.bfcl_env.process import BfclEnvProcess

    with BfclEnvProcess(log_path=tmp_path_factory.mktemp("bfcl_env") / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from agentic_verl.cpu.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("mt_model") / "model", hidden_size=32, num_layers=1)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    import pandas as pd

    from agentic_verl.eval.bfcl_data import load_multi_turn_questions

    out = tmp_path_factory.mktemp("mt_data")
    sft = out / "sft.parquet"
    pd.DataFrame([{"input_ids": [1, 2, 3, 4], "loss_mask": [0, 0, 1, 1]}]).to_parquet(sft)
    bfcl = out / "bfcl_questions.parquet"
    # BFCL's own questions in the row schema (as a careless conversion of its test set would write them)
    bfcl_rows = [{**rows()[0], "extra_info": {k: json.dumps(v) if not isinstance(v, str) else v
                                              for k, v in q["entry"].items()}}
                 for q in load_multi_turn_questions(["multi_turn_base"], 2)]
    pd.DataFrame(bfcl_rows).to_parquet(bfcl)
    return {"train": write_rows(out / "train.parquet"), "val": write_rows(out / "val.parquet", tasks=TASKS[:2]),
            "sft": sft, "bfcl": bfcl}


# -- composition --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_grpo_overrides_compose_with_verls_config(device, tmp_path):
    env = {"AGENTIC_VERL_DEVICE": device, "MODEL_PATH": "/models/m", "BFCL_ENV_URL": "http://127.0.0.1:8123",
           "PREFLIGHT": "0"}
    overrides = _recorded_overrides(GRPO, tmp_path, env)
    assert overrides[-1] == "trainer.total_epochs=3"  # "$@" last
    config = _compose("ppo_trainer", overrides)
    assert config.algorithm.adv_estimator == "grpo" and config.actor_rollout_ref.actor.use_kl_loss is True
    assert config.actor_rollout_ref.model.path == "/models/m"
    rollout = config.actor_rollout_ref.rollout
    assert rollout.agent.default_agent_loop == "bfcl_multi_turn" and rollout.name == "vllm"
    assert rollout.custom.bfcl_multi_turn.env_url == "http://127.0.0.1:8123"
    assert rollout.custom.bfcl_multi_turn.max_steps_per_turn == 20  # BFCL's MAXIMUM_STEP_LIMIT
    assert config.data.train_files.endswith("data/bfcl_mt/train/rl.parquet")
    assert config.data.val_files.endswith("data/bfcl_mt/val/rl.parquet")
    reward = config.reward.custom_reward_function
    assert (reward.path, reward.name) == ("reward_fns/bfcl_multi_turn.py", "compute_score")
    assert (REPO / reward.path).is_file() and config.reward.reward_manager.name == "agentic_trace"
    assert config.trainer.device == ("cpu" if device == "cpu" else "cuda")
    if device == "cpu":  # prompts with BFCL's function docs; SmolLM2's 8192 positions in all
        assert (config.data.max_prompt_length, config.data.max_response_length) == (7168, 1024)
        assert rollout.custom.bfcl_multi_turn.max_tokens_per_step == 256 and rollout.enforce_eager is True
        # one full-length trajectory per packed micro-batch (32k tokens of SmolLM2 logits ran out of memory)
        assert config.actor_rollout_ref.actor.ppo_max_token_len_per_gpu == 7168 + 1024
        assert config.actor_rollout_ref.ref.log_prob_max_token_len_per_gpu == 7168 + 1024
    else:
        assert (config.data.max_prompt_length, config.data.max_response_length) == (10240, 16384)
        assert config.actor_rollout_ref.actor.use_dynamic_bsz is True


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_sft_overrides_compose_with_the_sft_trainers_config(device, tmp_path):
    env = {"AGENTIC_VERL_DEVICE": device, "MODEL_PATH": "/models/m", "PREFLIGHT": "0"}
    launch = _recorded_overrides(SFT, tmp_path, env)  # after `-m agentic_verl.training.sft_trainer`
    assert launch[:4] == ["--config-path", str(REPO / "recipes"), "--config-name", "funreason_mt/sft"]
    assert launch[-1] == "trainer.total_epochs=3"
    config = compose_sft_launch("agentic_verl.training.sft_trainer", launch)
    assert config.loss.name == "sft" and config.model.path == "/models/m"
    assert config.data.custom_cls.name == "PretokenizedSFTDataset"
    assert config.data.train_files.endswith("data/bfcl_mt/train/sft.parquet")
    assert config.trainer.default_local_dir == "checkpoints/agentic_verl/funreason_mt_sft"  # what grpo.sh reads
    assert config.trainer.device == ("cpu" if device == "cpu" else "cuda")
    assert config.data.max_length == (8192 if device == "cpu" else 16384)
    assert config.data.micro_batch_size_per_gpu == 1  # CPU: four ~3k-token trajectories at once ran out of memory
    if device == "gpu":  # verl's token packing must hold one whole trajectory
        assert config.data.use_dynamic_bsz is True and config.data.max_token_len_per_gpu >= config.data.max_length


def test_grpo_refuses_without_a_model(tmp_path):
    env = {**os.environ, "SFT_CHECKPOINT_DIR": str(tmp_path / "none"),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    for name in ("MODEL_PATH", "AGENTIC_VERL_DEVICE"):
        env.pop(name, None)
    proc = subprocess.run(["bash", str(REPO / "recipes" / GRPO)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "holds no SFT checkpoint" in proc.stderr


# -- preflight ----------------------------------------------------------------------------------------------------
def _preflight(capsys, *args: str) -> tuple[int, str]:
    from agentic_verl.cli import main

    code = main(["preflight", "bfcl-mt", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _fails(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("FAIL")]


def _launch(data, model, url=None, train=None, val=None) -> list[str]:
    return ["--gpu-memory-gb", "80", "--", f"data.train_files={train or data['train']}",
            f"data.val_files={val or data['val']}", f"actor_rollout_ref.model.path={model}",
            *([f"{ENV_URL_KEY}={url}"] if url else [])]


def test_preflight_passes_a_good_setup(capsys, data, tiny_model, live_env):
    code, out = _preflight(capsys, *_launch(data, tiny_model, live_env.url))
    assert code == 0, out
    assert f"ok    train data: {data['train']}: {len(TASKS)} rows, first hw_multi_turn_base_0 (1 turns, " \
           "GorillaFileSystem)" in out
    assert f"ok    environment: {live_env.url}: /health ok" in out and "ok    gpu memory" in out
    # no URL: the recipe will start the server from .venv-bfcl
    code, out = _preflight(capsys, *_launch(data, tiny_model))
    assert code == 0 and "ok    environment: no BFCL_ENV_URL: the recipe starts the server from" in out


def test_preflight_refuses_missing_data_model_server_and_bfcl_questions(capsys, data, tiny_model, tmp_path):
    from agentic_verl.net import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    code, out = _preflight(capsys, *_launch(data, tmp_path / "no_model", dead, train=tmp_path / "none.parquet",
                                            val=data["bfcl"]))
    assert code == 1 and "not launching" in out
    fails = _fails(out)
    assert len(fails) == 3, out  # every problem at once
    assert "none.parquet does not exist (write it with `agentic-verl data bfcl-multi-turn" in fails[0]
    assert fails[1].startswith(f"FAIL  model: {tmp_path / 'no_model'} does not exist")
    assert fails[2].startswith(f"FAIL  environment: no answer from {dead}/health")
    assert "note  val data" in out and "2 of its first 2 rows share user turns or states with BFCL's multi-turn " \
        "questions, its test set (e.g. multi_turn_base_0: turn 0" in out  # validation on them: noted

    code, out = _preflight(capsys, *_launch(data, tiny_model, dead, train=data["bfcl"]))
    assert code == 1
    assert any("share user turns or states with BFCL's multi-turn questions" in line and "never train on them" in line
               for line in _fails(out)), out


def test_preflight_refuses_rows_that_are_not_bfcl_multi_turn_and_a_missing_venv(capsys, data, tiny_model, tmp_path,
                                                                                monkeypatch):
    import pandas as pd

    wrong = tmp_path / "rag.parquet"
    pd.DataFrame([{**rows()[0], "agent_name": "rag_r1"}]).to_parquet(wrong)
    broken = tmp_path / "broken.parquet"
    row = rows()[0]
    pd.DataFrame([{**row, "extra_info": {**row["extra_info"], "ground_truth": None}}]).to_parquet(broken)
    monkeypatch.setenv("BFCL_OFFICIAL_VENV", str(tmp_path / "no_venv"))
    code, out = _preflight(capsys, *_launch(data, tiny_model, train=wrong, val=broken))
    fails = _fails(out)
    assert code == 1 and len(fails) == 3, out
    assert "rows are for the 'rag_r1' agent loop, not bfcl_multi_turn" in fails[0]
    assert "the first row is not a BFCL multi-turn entry: extra_info.ground_truth is missing" in fails[1]
    assert f"no BFCL_ENV_URL, and no {tmp_path / 'no_venv'} to start the server from: `make bfcl-venv`" in fails[2]


def test_preflight_sft_stage_checks_the_pretokenized_rows(capsys, data, tiny_model):
    code, out = _preflight(capsys, "--stage", "sft", "--gpu-memory-gb", "80", "--", f"data.train_files={data['sft']}",
                           "data.val_files=null", f"model.path={tiny_model}")
    assert code == 0 and f"ok    train data: {data['sft']}: 1 rows" in out and "environment" not in out
    code, out = _preflight(capsys, "--stage", "sft", "--", f"data.train_files={data['train']}",
                           f"model.path={tiny_model}", "trainer.device=cpu")
    assert code == 1 and "has no input_ids + loss_mask columns" in _fails(out)[0]


# -- the recipe around the environment server ------------------------------------------------------------------------
# A stand-in python3: `-m agentic_verl.cli` (the preflight) and `-c` (free_port) run in the real interpreter; verl's
# launch is recorded, with the /health the environment server answered at that moment.
_PYTHON3 = """#!/usr/bin/env bash
if [[ "$1 $2" == "-m agentic_verl.cli" || "$1" == "-c" ]]; then exec "{python}" "$@"; fi
printf '%s\\n' "$@" > "$RECORD_FILE"
url=$(grep -o 'env_url=.*' "$RECORD_FILE" | cut -d= -f2-)
curl -sf --noproxy '*' "$url/health" > "$RECORD_FILE.health" || echo "no server at $url" > "$RECORD_FILE.health"
"""


def _run_grpo(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, list[str], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").write_text(_PYTHON3.format(python=sys.executable))
    (bin_dir / "python3").chmod(0o755)
    record = tmp_path / "argv.txt"
    full_env = {k: v for k, v in os.environ.items() if k not in ("AGENTIC_VERL_DEVICE", "BFCL_ENV_URL")}
    full_env.update({"PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]]),
                     "RECORD_FILE": str(record), "GPU_MEMORY_GB": "80", "N_GPUS": "1",
                     "BFCL_ENV_LOG": str(tmp_path / "env.log"), **env})
    proc = subprocess.run(["bash", str(REPO / "recipes" / GRPO)], cwd=tmp_path, env=full_env, capture_output=True,
                          text=True, timeout=120)
    argv = record.read_text().splitlines() if record.exists() else []
    health = (tmp_path / "argv.txt.health").read_text() if record.exists() else ""
    return proc, argv, health


@requires_venv
def test_grpo_starts_the_environment_server_around_training_and_stops_it(data, tiny_model, tmp_path):
    ensure_venv()
    env = {"MODEL_PATH": str(tiny_model), "TRAIN_FILE": str(data["train"]), "VAL_FILE": str(data["val"])}
    proc, argv, health = _run_grpo(tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok    environment: no BFCL_ENV_URL: the recipe starts the server from" in proc.stdout  # checked first
    [url_arg] = [a for a in argv if a.startswith(ENV_URL_KEY)]
    url = url_arg.split("=", 1)[1]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
    health = json.loads(health)  # up while verl ran
    assert health["status"] == "ok" and "GorillaFileSystem" in health["classes"]
    assert f"BFCL environment server ready on {url}" in proc.stdout
    import httpx

    with pytest.raises(httpx.HTTPError):  # and gone after
        httpx.get(url + "/health", timeout=5)
    port = url.rsplit(":", 1)[1]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    left = [p for p in ps if "bfcl" in p and f"--port {port}" in p]
    assert left == []  # neither `serve bfcl-env` nor the server it ran in .venv-bfcl

    # a failing preflight: nothing is started, verl is not launched
    (tmp_path / "argv.txt").unlink()
    proc, argv, _ = _run_grpo(tmp_path, {**env, "TRAIN_FILE": str(tmp_path / "missing.parquet")})
    assert proc.returncode == 1 and argv == [] and "BFCL environment server ready" not in proc.stdout


def test_grpo_with_a_running_server_checks_its_health(data, tiny_model, live_env, tmp_path):
    from agentic_verl.net import free_port

    env = {"MODEL_PATH": str(tiny_model), "TRAIN_FILE": str(data["train"]), "VAL_FILE": str(data["val"])}
    proc, argv, _ = _run_grpo(tmp_path, {**env, "BFCL_ENV_URL": live_env.url})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{ENV_URL_KEY}={live_env.url}" in argv and f"ok    environment: {live_env.url}: /health ok" in proc.stdout
    (tmp_path / "argv.txt").unlink()
    proc, argv, _ = _run_grpo(tmp_path, {**env, "BFCL_ENV_URL": f"http://127.0.0.1:{free_port()}"})
    assert proc.returncode == 1 and argv == [] and "FAIL  environment: no answer from" in proc.stdout


# -- the hand-written tasks ---------------------------------------------------------------------------------------
def test_hand_written_tasks_pass_bfcl_evals_checker_on_their_ground_truth(live_env):
    from agentic_verl.bfcl_env.client import BfclEnvClient
    from agentic_verl.bfcl_env.protocol import keyword_call
    from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

    async def check_all():
        client = BfclEnvClient(live_env.url)
        verdicts = []
        for row in rows(few_shot=True):
            entry = parse_entry(row["extra_info"], need_ground_truth=True)
            order = {doc["name"]: list(doc["parameters"]["properties"]) for doc in entry.function}
            gold = [[[keyword_call(c, order) for c in turn]] if turn else [] for turn in entry.ground_truth]
            verdicts.append(await client.check(entry=entry.raw, model_calls=gold))
            no_calls = await client.check(entry=entry.raw, model_calls=[[] for _ in entry.ground_truth])
            verdicts.append(no_calls)
        await client.aclose()
        return verdicts

    verdicts = asyncio.run(check_all())
    assert [v["valid"] for v in verdicts] == [True, False] * len(TASKS)
    assert {v["error_type"] for v in verdicts[1::2]} == {"multi_turn:empty_turn_model_response"}
