"""recipes/funreason/: the overrides compose with our SFT config (over verl's own), and SRML SFT runs through verl's
SFT trainer (torchrun) on CPU with the tiny model: loss goes down, alpha and the span losses are logged, and at
alpha = N_think / (N_think + N_call) the run's loss and gradient equal sft_plain.sh's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile

import pandas as pd
import pytest
from cpu_backend_helpers import REPO

from agentic_verl.agent_loops.prompts import bfcl_messages, funreason_target

RECIPES = {"funreason/sft_srml.sh": "srml", "funreason/sft_plain.sh": "sft"}
_RECORDER = '#!/usr/bin/env bash\nprintf \'%s\\n\' "$@" > "$RECORD_FILE"\n'
FUNCTIONS = [
    {
        "name": "add",
        "parameters": {
            "type": "dict",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
]
SAMPLES = [
    ("Add 1 and 2.", "The add function sums a and b.", "[add(a=1, b=2)]"),
    ("What is 3 plus 4?", "Call add with 3 and 4.", "[add(a=3, b=4)]"),
]


def recorded_sft_overrides(recipe: str, tmp_path, env: dict[str, str], args: list[str]) -> list[str]:
    """Run recipes/`recipe` with `args` and `env` (over this process's), with a torchrun stand-in that records its
    command line; the arguments our SFT trainer's module got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text(_RECORDER)
    (bin_dir / "torchrun").chmod((bin_dir / "torchrun").stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "RECORD_FILE": str(tmp_path / "argv.txt"),
        "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]]),
        **env,
    }
    subprocess.run(["bash", str(REPO / "recipes" / recipe), *args], cwd=REPO, env=env, check=True, timeout=60)
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    module_at = argv.index("-m")
    assert argv[module_at + 1] == "agentic_verl.training.sft_trainer"
    return argv[module_at + 2 :]


def _compose(launch: list[str]):
    """A recorded launch of our SFT trainer composed as its hydra main does (`--config-path/--config-name` first)."""
    from test_recipe_configs import compose_sft_launch

    return compose_sft_launch("agentic_verl.training.sft_trainer", launch)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_recipe_overrides_compose_with_our_sft_config(recipe, device, tmp_path):
    alpha = ["loss.kwargs.alpha=0.6"] if RECIPES[recipe] == "srml" else []
    overrides = recorded_sft_overrides(recipe, tmp_path, {"AGENTIC_VERL_DEVICE": device,
                                                          "MODEL_PATH": "/models/some-model"},
                                       [*alpha, "trainer.total_epochs=3"])
    assert overrides[:4] == ["--config-path", str(REPO / "recipes"), "--config-name", "funreason/sft"]
    assert overrides[-1] == "trainer.total_epochs=3"
    config = _compose(overrides)
    assert config.loss.name == RECIPES[recipe] and config.trainer.total_epochs == 3
    assert config.model.path == "/models/some-model"
    assert config.data.custom_cls.name == "FunctionCallSFTDataset" and config.data.pad_mode == "no_padding"
    if RECIPES[recipe] == "srml":
        assert config.loss.kwargs.alpha == 0.6  # the command line's
    else:
        assert dict(config.loss.kwargs) == {}  # verl's plain loss takes none
    if device == "gpu":  # the paper's settings (docs/methods.md "FunReason"), from funreason.yaml
        assert (config.data.train_batch_size, config.optim.lr, config.optim.lr_warmup_steps_ratio) == (512, 4e-5, 0.05)
        assert config.trainer.device == "cuda"
    else:
        assert config.trainer.device == "cpu" and config.engine.strategy == "fsdp2"
        assert config.data.train_batch_size == 4 and config.model.override_config.attn_implementation == "sdpa"


def _train_file(tmp_path):
    rows = [{"messages": [*bfcl_messages(q, FUNCTIONS), {"role": "assistant", "content": funreason_target(r, c)}]}
            for q, r, c in SAMPLES]  # fmt: skip
    path = tmp_path / "sft_train.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def _span_counts(train, model_dir) -> tuple[int, int]:
    from transformers import AutoTokenizer

    from agentic_verl.training.fc_sft_dataset import FunctionCallSFTDataset

    dataset = FunctionCallSFTDataset(str(train), AutoTokenizer.from_pretrained(str(model_dir)), {"max_length": 1024})
    # verl's loss reads loss_mask[t + 1] against log-prob t; the first token of a row is never a target
    think = sum(int((dataset[i]["loss_mask"] * dataset[i]["think_mask"]).sum()) for i in range(len(dataset)))
    total = sum(int(dataset[i]["loss_mask"].sum()) for i in range(len(dataset)))
    return think, total - think


def _run(recipe, tmp_path, model_dir, train, steps, micro, extra_args=()) -> list[dict]:
    """The recipe on CPU with the tiny model; verl's file-logger metrics per step. The batch is the whole dataset,
    so every step trains on the same samples; `micro` samples per micro-batch."""
    metrics_path = tmp_path / f"{recipe.replace('/', '_')}.jsonl"
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTIC_VERL_DEVICE": "cpu",
        "MODEL_PATH": str(model_dir),
        "TRAIN_FILE": str(train),
        "VAL_FILE": "null",
        "VERL_FILE_LOGGER_PATH": str(metrics_path),
        "TMPDIR": tempfile.gettempdir(),
    }
    overrides = [
        f"data.train_batch_size={len(SAMPLES)}", f"data.micro_batch_size_per_gpu={micro}", "data.max_length=1024",
        f"trainer.total_training_steps={steps}", "optim.lr=1e-3", *extra_args,
        f"trainer.default_local_dir={tmp_path / 'ckpt' / recipe.replace('/', '_')}",
        f"trainer.total_epochs={steps}",
        "optim.lr_scheduler_type=constant",
        "checkpoint.save_contents=[model]",  # verl saves at the last step
        # CPU speed only: no torch.compile builds (recompiled per sequence length), no activation recomputation
        "engine.use_torch_compile=False",
        "model.enable_gradient_checkpointing=False",
    ]
    proc = subprocess.run(
        ["bash", str(REPO / "recipes" / recipe), *overrides],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    (tmp_path / f"{recipe.replace('/', '_')}.log").write_text(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-6000:]
    steps_logged = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    assert [m["step"] for m in steps_logged] == list(range(1, steps + 1)), steps_logged
    return [m["data"] for m in steps_logged]


@pytest.mark.slow
def test_srml_sft_trains_and_logs_its_spans(tiny_model_dir, tmp_path):
    train = _train_file(tmp_path)
    n_think, n_call = _span_counts(train, tiny_model_dir)
    steps = _run("funreason/sft_srml.sh", tmp_path, tiny_model_dir, train, steps=3, micro=2)
    for m in steps:
        assert m["srml/alpha"] == pytest.approx(0.7)  # funreason.yaml / loss/srml.yaml
        assert (m["srml/think_tokens"], m["srml/call_tokens"]) == (n_think, n_call)
        assert m["train/loss"] == pytest.approx(0.7 * m["srml/loss_think"] + 0.3 * m["srml/loss_call"], rel=1e-5)
        assert m["train/grad_norm"] > 0
    for key in ("train/loss", "srml/loss_think", "srml/loss_call"):
        values = [m[key] for m in steps]
        assert values[0] > values[1] > values[2], (key, values)


@pytest.mark.slow
def test_srml_at_the_token_ratio_equals_plain_sft_in_verls_trainer(tiny_model_dir, tmp_path):
    train = _train_file(tmp_path)
    n_think, n_call = _span_counts(train, tiny_model_dir)
    ratio = n_think / (n_think + n_call)
    # one sample per micro-batch: the step's loss and gradient are accumulated over micro-batches, as verl does
    (plain,) = _run("funreason/sft_plain.sh", tmp_path, tiny_model_dir, train, steps=1, micro=1)
    (srml,) = _run(
        "funreason/sft_srml.sh",
        tmp_path,
        tiny_model_dir,
        train,
        steps=1,
        micro=1,
        extra_args=[f"loss.kwargs.alpha={ratio!r}"],
    )
    assert srml["srml/plain_alpha"] == pytest.approx(ratio)
    assert srml["train/loss"] == pytest.approx(plain["train/loss"], rel=1e-6)
    assert srml["train/grad_norm"] == pytest.approx(plain["train/grad_norm"], rel=1e-5)
    assert "srml/alpha" not in plain  # verl's own loss logs nothing of ours
