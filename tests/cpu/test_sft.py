"""verl's SFT trainer (torchrun) on CPU through recipes/rag_r1/sft.sh: chat-messages data with verl's own dataset,
and the pretokenized rag_r1 trajectories dataset the recipe uses by default."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pandas as pd
import pytest
from cpu_backend_helpers import REPO, SFT_CONVERSATIONS, pretokenized_sft_parquet

pytestmark = pytest.mark.slow


def _messages_parquet(path):
    rows = [{"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]} for q, a in SFT_CONVERSATIONS]
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("dataset", ["messages", "pretokenized"])
def test_sft_trainer_two_steps(dataset, tiny_model_dir, tmp_path):
    if dataset == "messages":
        # verl's own dataset for chat messages
        train, dataset_args = _messages_parquet(tmp_path / "train.parquet"), ["data.custom_cls.path=null",
                                                                                "data.custom_cls.name=null"]
    else:
        train, dataset_args = pretokenized_sft_parquet(tmp_path / "train.parquet", tiny_model_dir), []
    metrics_path = tmp_path / "metrics.jsonl"
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTIC_VERL_DEVICE": "cpu", "MODEL_PATH": str(tiny_model_dir), "TRAIN_FILE": str(train),
        "VERL_FILE_LOGGER_PATH": str(metrics_path), "TMPDIR": tempfile.gettempdir(),
    }
    overrides = ["data.train_batch_size=4", "data.micro_batch_size_per_gpu=2", "data.max_length=128",
                 "trainer.total_training_steps=2", "optim.lr=1e-3", *dataset_args,
                 f"trainer.default_local_dir={tmp_path / 'ckpt'}", "trainer.save_freq=-1"]
    if dataset == "messages":
        # The Qwen3 chat template renders the final assistant turn differently in a whole conversation (an empty
        # think block) than turn by turn, which verl's MultiTurnSFTDataset checks; verl's own switch accepts it.
        overrides.append("data.ignore_input_ids_mismatch=True")
    proc = subprocess.run(["bash", str(REPO / "recipes/rag_r1/sft.sh"), *overrides], cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    (tmp_path / "run.log").write_text(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-6000:]
    metrics = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    train_steps = [m for m in metrics if "train/loss" in m["data"]]
    assert [m["step"] for m in train_steps] == [1, 2], metrics
    losses = [m["data"]["train/loss"] for m in train_steps]
    assert all(0 < loss < 20 for loss in losses), losses
    assert all(m["data"]["train/grad_norm"] > 0 for m in train_steps)
    shutil.rmtree(tmp_path / "ckpt", ignore_errors=True)
