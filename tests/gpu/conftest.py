"""Fixtures for the GPU recipe runs: the tiny random Qwen2 with the real Qwen tokenizer, the real retrieval server
over a real bm25s index (tests/retrieval), and rag_r1 parquet for the questions that index answers; FunReason's SFT
rows and the learning test's function-choice task; synthetic screenshots as V2P's pointer, text-click and GRPO rows,
a tiny Qwen2.5-VL and a V2P pointer model over one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from retrieval.conftest import retrieval_server, tiny_corpus_path, tiny_index_dir  # noqa: F401


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from agentic_verl.cpu.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny_qwen2") / "model", arch="qwen2", seed=0)


@pytest.fixture(scope="session")
def rag_r1_data(tmp_path_factory):
    from cpu.cpu_backend_helpers import write_rag_r1_data  # tests/ is on sys.path (see tests/retrieval/conftest.py)

    return write_rag_r1_data(tmp_path_factory.mktemp("rag_r1_data"))


# ---------------------------------------------------------------- FunReason and V2P (test_funreason_gpu.py, test_v2p_gpu.py)
# tests/cpu's helpers (test_v2p_grpo) import their siblings by name, as tests/cpu's own tests do
_CPU_TESTS = str(Path(__file__).resolve().parents[1] / "cpu")
if _CPU_TESTS not in sys.path:
    sys.path.append(_CPU_TESTS)

FC_FUNCTIONS = [{"name": "add", "parameters": {"type": "dict", "properties": {"a": {"type": "integer"},
                                                                             "b": {"type": "integer"}},
                                               "required": ["a", "b"]}}]
FC_SAMPLES = [("Add 1 and 2.", "The add function sums a and b.", "[add(a=1, b=2)]"),
              ("What is 3 plus 4?", "Call add with 3 and 4.", "[add(a=3, b=4)]"),
              ("Sum 10 and 5.", "Add 10 to 5.", "[add(a=10, b=5)]"),
              ("Add 7 to 8.", "This needs add with 7 and 8.", "[add(a=7, b=8)]")]


@pytest.fixture(scope="session")
def funreason_sft_data(tmp_path_factory):
    """4 FunReason SFT rows (`messages`: BFCL prompt, `<think>reasoning</think>` + the call), as `data fc` writes."""
    import pandas as pd

    from agentic_verl.agent_loops.prompts import bfcl_messages, funreason_target

    rows = [{"messages": [*bfcl_messages(q, FC_FUNCTIONS), {"role": "assistant", "content": funreason_target(r, c)}]}
            for q, r, c in FC_SAMPLES]
    path = tmp_path_factory.mktemp("funreason_sft") / "sft_train.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


@pytest.fixture(scope="session")
def choice_task_start(tmp_path_factory):
    """(SFT start, RL parquet) of the learning test's task (agentic_verl/demo/learning.py): a tiny llama that writes
    well-formed calls and picks the right function ~5/8 of the time (plain-PyTorch SFT, ~1 min on CPU)."""
    from agentic_verl.demo.learning import prepare

    files = prepare(tmp_path_factory.mktemp("choice_task"))
    return files.model, files.train


@pytest.fixture(scope="session")
def gui_data(tmp_path_factory):
    """Synthetic screenshots with known boxes (agentic_verl.v2p.synthetic) in ScreenSpot-v2's layout and what
    `agentic-verl data gui` writes from them: pointer SFT rows and text-click SFT rows (8 each, 2 screenshots), and
    GRPO rows from 4 screenshots of different sizes (test_v2p_grpo.write_synthetic_data)."""
    from gui.gui_helpers import write_seeclick  # tests/ is on sys.path
    from test_v2p_grpo import write_synthetic_data

    from agentic_verl.cli import main
    from agentic_verl.v2p.synthetic import synthetic_screen

    root = tmp_path_factory.mktemp("gui_data")
    folder = write_seeclick(root / "ScreenSpot-v2", [synthetic_screen(seed, size)
                                                     for seed, size in enumerate([(336, 224), (280, 196)])])
    data = {"pointer": root / "pointer.parquet", "click": root / "click.parquet"}
    assert main(["data", "gui", "--data", str(folder), "--out", str(data["pointer"])]) == 0
    assert main(["data", "gui", "--data", str(folder), "--target", "text-click", "--out", str(data["click"])]) == 0
    data["grpo"], _ = write_synthetic_data(root / "grpo", limit=4)
    return data


@pytest.fixture(scope="session")
def tiny_vl_dir():
    """The tiny random Qwen2.5-VL with the real processor (`agentic-verl cpu-model tiny-vl`; cached)."""
    from agentic_verl.commands.cpu_model import _tiny_vl

    return _tiny_vl(None, "float32", False)


@pytest.fixture(scope="session")
def tiny_pointer_dir(tmp_path_factory):
    """A V2P pointer model over a tiny random Qwen2.5-VL (`python -m agentic_verl.v2p.model --tiny`)."""
    from agentic_verl.v2p.model import main

    out = tmp_path_factory.mktemp("v2p_init") / "model"
    assert main(["--tiny", "--out", str(out)]) == 0
    return out
