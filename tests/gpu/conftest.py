"""Fixtures for the GPU recipe runs: the tiny random Qwen2 with the real Qwen tokenizer, the real retrieval server
over a real bm25s index (tests/retrieval), and rag_r1 parquet for the questions that index answers."""

from __future__ import annotations

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
