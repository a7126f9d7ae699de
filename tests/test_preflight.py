"""`agentic-verl preflight rag-r1` and the rag_r1 recipes that run it: against real files, a real tiny model folder
and the real retrieval server over a bm25s index (tests/retrieval/conftest.py), it passes a good setup and refuses
a missing server, missing data, a missing model, a mode the data was not written for and a GPU budget that does not
add up, printing every problem at once. The recipes run for real up to verl's launch, which a stand-in `python3`
records instead (the preflight and the data-mode lookup still run in the real interpreter)."""

from __future__ import annotations

import doctest
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import retrieval.conftest as retrieval_fixtures

from agentic_verl.cli import main
from agentic_verl.data.rag_r1_parquet import read_mode, to_rows, write_parquet
from agentic_verl.preflight import (
    RagR1Settings,
    Report,
    check_gpu_memory,
    count_parameters,
    memory_budget,
    settings_from_overrides,
)

REPO = Path(__file__).resolve().parents[1]
# The real retrieval server over a bm25s index of tests/retrieval's tiny corpus (session fixtures).
tiny_corpus_path = retrieval_fixtures.tiny_corpus_path
tiny_index_dir = retrieval_fixtures.tiny_index_dir
retrieval_server = retrieval_fixtures.retrieval_server
QUESTIONS = [
    {"id": "q1", "question": "Who wrote Hamlet?", "golden_answers": ["William Shakespeare"]},
    {"id": "q2", "question": "What is the capital of Japan?", "golden_answers": ["Tokyo"]},
]
# Qwen2.5-7B-Instruct's dimensions (config.json only: 7.6B parameters)
QWEN_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584,
           "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
           "tie_word_embeddings": False}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from agentic_verl.cpu.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("preflight_model") / "model", hidden_size=32, num_layers=1)


@pytest.fixture(scope="module")
def rag_data(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("preflight_data")
    files = {}
    for mode in ("sq", "mq"):
        files[f"{mode}_train"] = write_parquet(to_rows(QUESTIONS, "train", "toy_qa", mode=mode), out / mode / "train.parquet")
        files[f"{mode}_test"] = write_parquet(to_rows(QUESTIONS[:1], "test", "toy_qa", mode=mode), out / mode / "test.parquet")
    return files


def _preflight(capsys, *args: str) -> tuple[int, str]:
    code = main(["preflight", "rag-r1", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _fails(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("FAIL")]


def _good_args(rag_data, tiny_model, url) -> list[str]:
    return ["--stage", "grpo", "--train", str(rag_data["sq_train"]), "--val", str(rag_data["sq_test"]),
            "--model", str(tiny_model), "--retrieval-url", url, "--gpu-memory-gb", "80"]


def test_passes_on_a_good_setup_and_prints_the_arithmetic(capsys, rag_data, tiny_model, retrieval_server):
    code, out = _preflight(capsys, *_good_args(rag_data, tiny_model, retrieval_server.url), "--mode", "sq")
    assert code == 0, out
    assert _fails(out) == []
    assert f"ok    train data: {rag_data['sq_train']}: 2 rows, mode sq" in out
    assert "ok    mode: sq (the data's) = the run's" in out
    # a real search with the first training question reached the index
    assert "ok    retrieval: " + retrieval_server.url + ": /health ok; /retrieve 'Who wrote Hamlet?' -> 2 passage(s)" in out
    # one GPU of 80 GiB: actor 16 B/param, no reference model (verl's default use_kl_loss=False), vLLM's 0.5 share
    assert "actor params+grads+Adam 16 B x" in out and "vLLM gpu_memory_utilization 0.5 x 80 GiB = 40.0 GiB" in out
    assert "reference model" not in out


def test_refuses_a_missing_server(capsys, rag_data, tiny_model):
    from agentic_verl.net import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    code, out = _preflight(capsys, *_good_args(rag_data, tiny_model, dead))
    assert code == 1
    [fail] = _fails(out)
    assert fail.startswith(f"FAIL  retrieval: no answer from {dead}/health") and "agentic-verl serve retrieval" in fail
    assert "not launching" in out and "PREFLIGHT=0" in out


def test_refuses_missing_data(capsys, rag_data, tiny_model, retrieval_server, tmp_path):
    not_parquet = tmp_path / "train.parquet"
    not_parquet.write_text("question,answer\n")
    args = _good_args(rag_data, tiny_model, retrieval_server.url)
    code, out = _preflight(capsys, *args, "--train", str(tmp_path / "missing.parquet"))
    assert code == 1
    assert _fails(out) == [f"FAIL  train data: {tmp_path / 'missing.parquet'} does not exist (write it with "
                           "`agentic-verl data rag-r1 --questions ... --out DIR`)"]
    code, out = _preflight(capsys, *args, "--train", str(not_parquet))
    assert code == 1 and _fails(out)[0].startswith(f"FAIL  train data: {not_parquet} is not a readable parquet file")


def test_refuses_a_missing_model(capsys, rag_data, tiny_model, retrieval_server, tmp_path, monkeypatch):
    args = _good_args(rag_data, tiny_model, retrieval_server.url)
    code, out = _preflight(capsys, *args, "--model", str(tmp_path / "no_such_model"))
    assert code == 1
    assert _fails(out) == [f"FAIL  model: {tmp_path / 'no_such_model'} does not exist (a local model folder, or a "
                           "Hub id like Qwen/Qwen2.5-7B-Instruct)"]
    # a file where a folder should be
    code, out = _preflight(capsys, *args, "--model", str(tiny_model / "config.json"))
    assert code == 1 and _fails(out) == [f"FAIL  model: {tiny_model / 'config.json'} is a file, not a model folder "
                                         "(config.json, weights, tokenizer)"]
    # a folder without weights
    no_weights = tmp_path / "config_only"
    no_weights.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_model / name, no_weights / name)
    code, out = _preflight(capsys, *args, "--model", str(no_weights))
    assert code == 1 and _fails(out) == [f"FAIL  model: {no_weights} lacks weights (*.safetensors / *.bin)"]
    # a Hub id offline, not in the (empty) HF cache; online it would only be a note (downloaded by verl)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_home" / "hub"))
    code, out = _preflight(capsys, *args, "--model", "Qwen/Qwen2.5-7B-Instruct")
    assert code == 1
    [fail] = _fails(out)
    assert fail.startswith("FAIL  model: Qwen/Qwen2.5-7B-Instruct: no such local folder, and HF_HUB_OFFLINE=1 while "
                           "it is not in the HF cache")
    assert "budget not checked" in out  # no parameters to count


def test_every_problem_is_printed_not_just_the_first(capsys, tmp_path):
    from agentic_verl.net import free_port

    code, out = _preflight(capsys, "--stage", "ppo", "--train", str(tmp_path / "train.parquet"),
                           "--model", str(tmp_path / "model"), "--retrieval-url", f"http://127.0.0.1:{free_port()}",
                           "--device", "cpu")
    assert code == 1
    assert [line.split(":")[0] for line in _fails(out)] == ["FAIL  train data", "FAIL  model", "FAIL  critic model",
                                                             "FAIL  retrieval"]
    assert "4 problem(s)" in out


def test_refuses_a_mode_the_data_was_not_written_for(capsys, rag_data, tiny_model, retrieval_server):
    args = _good_args(rag_data, tiny_model, retrieval_server.url)
    code, out = _preflight(capsys, *args, "--mode", "mq")
    assert code == 1
    [fail] = _fails(out)
    assert "the run's mode mq but the data's prompts were written for sq" in fail
    assert "agentic-verl data rag-r1 --questions ... --out DIR --mode mq" in fail
    # train and validation written for different modes
    code, out = _preflight(capsys, *args, "--val", str(rag_data["mq_test"]))
    assert code == 1 and "written for different modes" in _fails(out)[0]


def test_the_launch_overrides_win_over_the_flags(capsys, rag_data, tiny_model, retrieval_server):
    """The recipes pass exactly the overrides verl gets, "$@" included: a user's data.train_files=... is what is
    checked."""
    args = _good_args(rag_data, tiny_model, retrieval_server.url)
    code, out = _preflight(capsys, *args, "--", "data.train_files=/nowhere/train.parquet", "trainer.device=cpu")
    assert code == 1 and _fails(out)[0].startswith("FAIL  train data: /nowhere/train.parquet does not exist")
    assert "CPU run (AGENTIC_VERL_DEVICE=cpu): no GPU budget" in out


@pytest.mark.parametrize("overrides,expected", [
    ([], RagR1Settings("grpo")),  # verl's defaults
    (["trainer.n_gpus_per_node=8", "trainer.nnodes=2"], RagR1Settings("grpo", n_gpus=8, nnodes=2)),
    (["+actor_rollout_ref.rollout.custom.rag_r1.mode=mq"], RagR1Settings("grpo", mode="mq")),  # + prefix
    (["data.val_files=null"], RagR1Settings("grpo", val=None)),
    (["actor_rollout_ref.rollout.gpu_memory_utilization=0.3", "actor_rollout_ref.actor.fsdp_config.param_offload=True"],
     RagR1Settings("grpo", gpu_memory_utilization=0.3, param_offload=True)),
    (["model.path=/m", "model.path=/n"], RagR1Settings("grpo", model="/n")),  # the last one wins, as in hydra
    (["'+actor_rollout_ref.ref.optim=${actor_rollout_ref.actor.optim}'", "flag"], RagR1Settings("grpo")),  # ignored
])
def test_settings_from_overrides(overrides, expected):
    assert settings_from_overrides(RagR1Settings("grpo"), overrides) == expected


@pytest.mark.parametrize("config_name, kl", [("rag_r1/grpo", {"use_kl_loss": True, "use_kl_in_reward": False}),
                                             ("rag_r1/ppo", {"use_kl_loss": False, "use_kl_in_reward": True})])
def test_settings_from_a_recipe_config_launch(config_name, kl):
    """The RL recipes keep their method settings in YAML: the preflight composes the launch (the KL settings, which
    decide whether the GPU budget counts a reference model, come from the YAML) and the overrides still win."""
    launch = ["--config-path", str(REPO / "recipes"), "--config-name", config_name, "data.train_files=t.parquet",
              "trainer.n_gpus_per_node=2", "+actor_rollout_ref.rollout.custom.rag_r1.mode=sq"]
    settings = settings_from_overrides(RagR1Settings("grpo"), launch)
    assert (settings.use_kl_loss, settings.use_kl_in_reward) == (kl["use_kl_loss"], kl["use_kl_in_reward"])
    assert (settings.train, settings.n_gpus, settings.mode) == ("t.parquet", 2, "sq")
    flipped = settings_from_overrides(RagR1Settings("grpo"), [*launch, f"actor_rollout_ref.actor.use_kl_loss="
                                                                        f"{not kl['use_kl_loss']}"])
    assert flipped.use_kl_loss is not kl["use_kl_loss"]
    with pytest.raises(ValueError, match="needs both --config-path and --config-name"):
        settings_from_overrides(RagR1Settings("grpo"), launch[2:])


def test_gpu_memory_budget_refuses_a_7b_ppo_on_one_gpu_and_passes_on_eight(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN_7B))
    params, how = count_parameters(tmp_path)
    assert how == "estimated from config.json" and 7.5e9 < params < 7.7e9  # Qwen2.5-7B: 7.62B
    settings = RagR1Settings("ppo", model=str(tmp_path), gpu_memory_gb=80.0, use_kl_in_reward=True)

    one = Report()
    check_gpu_memory(one, settings)
    [(level, topic, message)] = one.findings
    assert (level, topic) == ("FAIL", "gpu memory")
    # actor 16 B x 7.62B = 113.5 GiB, reference 14.2, critic 113.5, vLLM 40: 281.1 GiB on one 80 GiB GPU
    assert "total 281.1 of 80.0 GiB" in message and "Over by 201.1 GiB" in message and "param_offload=True" in message

    eight = Report()
    check_gpu_memory(eight, settings_from_overrides(settings, ["trainer.n_gpus_per_node=8"]))
    assert eight.findings[0][0] == "ok" and "total 70.1 of 80.0 GiB" in eight.findings[0][2]


def test_memory_budget_terms_follow_the_stage():
    params = 1_000_000_000
    _, sft = memory_budget(RagR1Settings("sft", n_gpus=2), params, None, 80.0)
    assert sft == ["actor params+grads+Adam 16 B x 1.00B params / 2 GPU(s) = 7.5 GiB"]  # no vLLM, no reference
    _, offloaded = memory_budget(RagR1Settings("grpo", param_offload=True, optimizer_offload=True), params, None, 80.0)
    assert offloaded[0].startswith("actor params+grads+Adam 0 B") and len(offloaded) == 2  # + vLLM


def test_sft_stage_checks_an_sft_dataset_and_no_server(capsys, tiny_model, tmp_path):
    good = tmp_path / "sft.parquet"
    pd.DataFrame([{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1]}]).to_parquet(good)
    code, out = _preflight(capsys, "--stage", "sft", "--train", str(good), "--model", str(tiny_model),
                           "--device", "cpu")
    assert code == 0 and "retrieval" not in out, out
    wrong = tmp_path / "wrong.parquet"
    pd.DataFrame([{"text": "hello"}]).to_parquet(wrong)
    code, out = _preflight(capsys, "--stage", "sft", "--train", str(wrong), "--model", str(tiny_model),
                           "--device", "cpu")
    assert code == 1 and "neither input_ids + loss_mask" in _fails(out)[0]


def test_read_mode_and_the_data_mode_command(capsys, rag_data, tmp_path):
    assert read_mode(rag_data["sq_train"]) == "sq" and read_mode(rag_data["mq_test"]) == "mq"
    assert main(["preflight", "data-mode", str(rag_data["mq_train"])]) == 0
    assert capsys.readouterr().out == "mq\n"
    mixed = tmp_path / "mixed.parquet"
    pd.concat([pd.read_parquet(rag_data["sq_train"]), pd.read_parquet(rag_data["mq_test"])]).to_parquet(mixed)
    with pytest.raises(ValueError, match="several modes"):
        read_mode(mixed)
    with pytest.raises(FileNotFoundError):
        read_mode(tmp_path / "none.parquet")


def test_docstring_examples():
    import importlib

    modules = [importlib.import_module(f"agentic_verl.{name}") for name in (
        "fail_fast", "preflight.settings", "preflight.model_checks", "preflight.gpu_memory")]
    for module in modules:
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


# -- the recipes ---------------------------------------------------------------------------------------
# A stand-in python3: the preflight, the data-mode lookup (`python3 -m agentic_verl.cli ...`) and the SFT checkpoint
# lookup (`python3 -m agentic_verl.training.checkpoints`) run in the real interpreter; anything else (verl's launch)
# is recorded instead of run.
_PYTHON3 = """#!/usr/bin/env bash
if [[ "$1 $2" == "-m agentic_verl.cli" || "$1 $2" == "-m agentic_verl.training.checkpoints" ]]; then
    exec "{python}" "$@"
fi
printf '%s\\n' "$@" > "$RECORD_FILE"
"""


def _run_recipe(recipe: str, tmp_path: Path, env: dict[str, str],
                args: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").write_text(_PYTHON3.format(python=sys.executable))
    (bin_dir / "python3").chmod(0o755)
    record = tmp_path / "argv.txt"
    record.unlink(missing_ok=True)
    full_env = {key: value for key, value in os.environ.items() if key not in ("AGENTIC_VERL_DEVICE", "VERL_PLATFORM")}
    full_env.update({"PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]]),
                     "RECORD_FILE": str(record), "GPU_MEMORY_GB": "80", "N_GPUS": "1", **env})
    proc = subprocess.run(["bash", str(REPO / "recipes" / recipe), *args], cwd=tmp_path, env=full_env, capture_output=True,
                          text=True, timeout=120)
    argv = record.read_text().splitlines() if record.exists() else []
    return proc, argv[argv.index("-m") + 2:] if "-m" in argv else []


@pytest.mark.parametrize("recipe", ["rag_r1/grpo.sh", "rag_r1/ppo.sh"])
def test_recipe_defaults_rag_mode_to_the_data_and_refuses_another(recipe, rag_data, tiny_model, retrieval_server,
                                                                  tmp_path):
    env = {"MODEL_PATH": str(tiny_model), "TRAIN_FILE": str(rag_data["sq_train"]),
           "VAL_FILE": str(rag_data["sq_test"]), "RETRIEVAL_URL": retrieval_server.url}
    proc, overrides = _run_recipe(recipe, tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "++actor_rollout_ref.rollout.custom.rag_r1.mode=sq" in overrides  # the data's mode
    assert overrides[:4] == ["--config-path", str(REPO / "recipes"), "--config-name", recipe.removesuffix(".sh")]
    assert "FAIL" not in proc.stdout and "ok    retrieval" in proc.stdout

    mq = ("++actor_rollout_ref.rollout.custom.rag_r1.mode=mq",)  # a run-level mode on the command line
    proc, overrides = _run_recipe(recipe, tmp_path, env, mq)
    assert proc.returncode == 1 and overrides == []  # refused before launching verl
    assert "the run's mode mq but the data's prompts were written for sq" in proc.stdout
    assert "--mode mq" in proc.stdout and "not launching" in proc.stderr

    # PREFLIGHT=0 skips every check (the loop itself still refuses the mismatch at its first sample)
    proc, overrides = _run_recipe(recipe, tmp_path, {**env, "PREFLIGHT": "0"}, mq)
    assert proc.returncode == 0 and overrides[-1] == mq[0]
    assert "preflight checks skipped" in proc.stderr


def test_recipe_refuses_a_dead_server_before_launching(rag_data, tiny_model, tmp_path):
    from agentic_verl.net import free_port

    proc, overrides = _run_recipe("rag_r1/grpo.sh", tmp_path, {
        "MODEL_PATH": str(tiny_model), "TRAIN_FILE": str(rag_data["sq_train"]), "VAL_FILE": str(rag_data["sq_test"]),
        "RETRIEVAL_URL": f"http://127.0.0.1:{free_port()}"})
    assert proc.returncode == 1 and overrides == []
    assert "FAIL  retrieval: no answer from" in proc.stdout


def test_rl_recipes_start_from_the_sft_checkpoint(rag_data, tiny_model, retrieval_server, tmp_path):
    """MODEL_PATH unset: the latest checkpoint sft.sh saved (verl's tracker file + its HF folder: FSDP's layout here,
    both engines' in tests/training/test_checkpoint_handoff.py); with
    none, a refusal that says to run sft.sh first or set MODEL_PATH."""
    env = {"TRAIN_FILE": str(rag_data["sq_train"]), "VAL_FILE": str(rag_data["sq_test"]),
           "RETRIEVAL_URL": retrieval_server.url, "SFT_CHECKPOINT_DIR": str(tmp_path / "sft")}
    proc, overrides = _run_recipe("rag_r1/grpo.sh", tmp_path, env)
    assert proc.returncode == 2 and overrides == []
    assert "holds no SFT checkpoint with HF weights" in proc.stderr
    assert "Run bash recipes/rag_r1/sft.sh first" in proc.stderr and "MODEL_PATH=Qwen/Qwen2.5-7B-Instruct" in proc.stderr

    hf = tmp_path / "sft" / "global_step_3" / "huggingface"
    shutil.copytree(tiny_model, hf)
    (tmp_path / "sft" / "latest_checkpointed_iteration.txt").write_text("3")
    for recipe in ("rag_r1/grpo.sh", "rag_r1/ppo.sh"):
        proc, overrides = _run_recipe(recipe, tmp_path, env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"actor_rollout_ref.model.path={hf}" in overrides
        if recipe == "rag_r1/ppo.sh":
            assert f"critic.model.path={hf}" in overrides


def test_sft_recipe_saves_the_hf_folder_the_rl_recipes_read(tiny_model, tmp_path):
    train = tmp_path / "sft.parquet"
    pd.DataFrame([{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1]}]).to_parquet(train)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text("#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > \"$RECORD_FILE\"\n")
    (bin_dir / "torchrun").chmod(0o755)
    proc, _ = _run_recipe("rag_r1/sft.sh", tmp_path, {"MODEL_PATH": str(tiny_model), "TRAIN_FILE": str(train)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok    train data" in proc.stdout and "ok    gpu memory" in proc.stdout
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    launch = argv[argv.index("-m") + 2 :]
    assert launch[:4] == ["--config-path", str(REPO / "recipes"), "--config-name", "rag_r1/sft"]
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=launch[1], version_base=None):  # as verl's SFT trainer composes it
        config = compose(config_name=launch[3], overrides=launch[4:])
    assert config.trainer.default_local_dir == "checkpoints/agentic_verl/rag_r1_sft"  # what ppo/grpo.sh look in
    assert list(config.checkpoint.save_contents) == ["model", "optimizer", "extra", "hf_model"]


# ENGINE=megatron as recipes/_common/engine.sh launches it: verl's own choice; the recipes' YAML then include their
# engine YAML (recipes/_common/engine/megatron_rl.yaml: TP 2, PP 2; megatron_sft.yaml: TP 4)
MEGATRON_RL = ["model_engine=megatron"]


def test_settings_from_a_megatron_recipe_launch():
    # the composed config carries the engine and its sizes; offload comes from the Megatron actor's own keys
    launch = ["--config-path", str(REPO / "recipes"), "--config-name", "rag_r1/grpo", "trainer.n_gpus_per_node=8",
              *MEGATRON_RL, "actor_rollout_ref.actor.megatron.optimizer_offload=True"]
    settings = settings_from_overrides(RagR1Settings("grpo"), launch)
    assert (settings.engine, settings.tensor_parallel, settings.pipeline_parallel) == ("megatron", 2, 2)
    assert (settings.param_offload, settings.optimizer_offload) == (False, True)
    fsdp = settings_from_overrides(RagR1Settings("grpo"), launch[:5])
    assert (fsdp.engine, fsdp.tensor_parallel) == ("fsdp", 1)  # main_ppo's `dp`
    wider = settings_from_overrides(RagR1Settings("grpo"), [*launch, "actor_rollout_ref.actor.megatron."
                                                                       "tensor_model_parallel_size=4"])
    assert wider.tensor_parallel == 4  # the command line's size over the engine YAML's
    sft = settings_from_overrides(RagR1Settings("sft"), ["engine=megatron", "engine.tensor_model_parallel_size=4",
                                                         "engine.param_offload=True"])
    assert (sft.engine, sft.tensor_parallel, sft.param_offload) == ("megatron", 4, True)
    # an SFT recipe's launch, composed (the loss group from agentic_verl/training/config included)
    sft_launch = ["--config-path", str(REPO / "recipes"), "--config-name", "funreason/sft", "trainer.n_gpus_per_node=8"]
    sft = settings_from_overrides(RagR1Settings("sft"), [*sft_launch, "engine=megatron", "optim=megatron"])
    assert (sft.engine, sft.tensor_parallel, sft.pipeline_parallel, sft.n_gpus) == ("megatron", 4, 1, 8)
    assert settings_from_overrides(RagR1Settings("sft"), sft_launch).engine == "fsdp"


@pytest.mark.parametrize("settings, lines", [
    # FSDP: 16 B per parameter over all 8 GPUs
    (RagR1Settings("sft", n_gpus=8), ["actor params+grads+Adam 16 B x 1.00B params / 8 GPU(s) = 1.9 GiB"]),
    # Megatron TP 2 x PP 2 on 8 GPUs (DP 2): 6 B / 4 + 12 B / 8 = 3 B per parameter
    (RagR1Settings("sft", n_gpus=8, engine="megatron", tensor_parallel=2, pipeline_parallel=2),
     ["actor Megatron params+grads 6 B x 1.00B / TP x PP 4 + distributed Adam 12 B / (TP x PP x DP 8) = 2.8 GiB"]),
    # context parallelism shards no weights: DP 1 of 8 GPUs at TP 2 x PP 2 x CP 2
    (RagR1Settings("sft", n_gpus=8, engine="megatron", tensor_parallel=2, pipeline_parallel=2, context_parallel=2),
     ["actor Megatron params+grads 6 B x 1.00B / TP x PP 4 + distributed Adam 12 B / (TP x PP x DP 4) = 4.2 GiB"]),
    # the reference model is sharded by model parallelism only; the optimizer offloaded
    (RagR1Settings("grpo", n_gpus=8, engine="megatron", tensor_parallel=4, use_kl_loss=True, optimizer_offload=True,
                   gpu_memory_utilization=0.25),
     ["actor Megatron params+grads 6 B x 1.00B / TP x PP 4 + distributed Adam 0 B / (TP x PP x DP 8) = 1.4 GiB",
      "reference model 2 B (bf16) x 1.00B / 4 = 0.5 GiB", "vLLM gpu_memory_utilization 0.25 x 80 GiB = 20.0 GiB"]),
])
def test_memory_budget_follows_the_engine(settings, lines):
    assert memory_budget(settings, 1_000_000_000, None, 80.0)[1] == lines


def _verl_trainer_config(name: str):
    import importlib.util

    from omegaconf import OmegaConf

    return OmegaConf.load(Path(importlib.util.find_spec("verl").origin).parent / "trainer" / "config" / name)


@pytest.mark.parametrize("engine, stage, keys, absent", [
    ("fsdp", "grpo", ["actor_rollout_ref.actor.fsdp_config.param_offload",
                      "actor_rollout_ref.actor.fsdp_config.optimizer_offload"], "megatron"),
    ("megatron", "ppo", ["actor_rollout_ref.actor.megatron.param_offload",
                         "actor_rollout_ref.actor.megatron.optimizer_offload"], "fsdp_config"),
    ("megatron", "sft", ["engine.param_offload", "engine.optimizer_offload"], "actor_rollout_ref"),
])
def test_an_over_budget_run_gets_its_engines_offload_keys(tmp_path, engine, stage, keys, absent):
    (tmp_path / "config.json").write_text(json.dumps(QWEN_7B))
    report = Report()
    check_gpu_memory(report, RagR1Settings(stage, model=str(tmp_path), gpu_memory_gb=24.0, engine=engine))
    [(level, _, message)] = report.findings
    advice = message.split("Over by", 1)[1]
    assert level == "FAIL" and all(f"{key}=True" in advice for key in keys) and absent not in advice, advice
    assert ("tensor_model_parallel_size" in advice) == (engine == "megatron")
    # each suggested key is one of verl's: in its generated main_ppo config for the engine, or its engine config
    if stage == "sft":
        config = _verl_trainer_config(f"engine/{engine}.yaml")
        keys = [key.removeprefix("engine.") for key in keys]
    else:
        config = _verl_trainer_config("_generated_ppo_megatron_trainer.yaml" if engine == "megatron"
                                      else "_generated_ppo_trainer.yaml")
    from omegaconf import OmegaConf

    assert all(OmegaConf.select(config, key) is False for key in keys), keys
