"""Eval tests reuse the data fixtures: SmolLM2, a toy world, its bm25s index and a live retrieval server; and the
BFCL environment server of tests/bfcl_env; and the Qwen tokenizer, whose chat template renders tools (FC mode)."""

import pytest
from bfcl_env.conftest import bfcl_env  # noqa: F401
from data.conftest import (  # noqa: F401
    smollm2_dir,
    smollm2_tokenizer,
    toy_index_dir,
    toy_retrieval_url,
    toy_world_dir,
)


@pytest.fixture(scope="module")
def qwen_dir() -> str:
    """The offline Qwen tokenizer's folder (its chat template renders tools: FC mode's tests)."""
    from agentic_verl.cpu.models import qwen_tokenizer_dir

    return str(qwen_tokenizer_dir())


@pytest.fixture(scope="module")
def qwen(qwen_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(qwen_dir)
