"""Fixtures for the CPU backend: a tiny random Qwen2 with the real Qwen tokenizer, a tiny random llama with
SmolLM2's (49k tokens: every logit three times cheaper, for the runs that only need a policy that moves), and (for the end-to-end
runs) the real retrieval server over a real bm25s index from tests/retrieval."""

from __future__ import annotations

import pytest
from retrieval.conftest import retrieval_server, tiny_corpus_path, tiny_index_dir  # noqa: F401


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from agentic_verl.cpu.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny_qwen2") / "model", arch="qwen2", seed=0)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    from agentic_verl.cpu.models import make_tiny_model, smollm2_hf_dir

    return make_tiny_model(tmp_path_factory.mktemp("tiny_llama") / "model", arch="llama", seed=0,
                           tokenizer_dir=smollm2_hf_dir())
