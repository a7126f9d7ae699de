"""Fixtures for the data and eval tests: the real SmolLM2-135M-Instruct folder (converted once, cached), and a small
toy world with a real bm25s index served by the real retrieval server on a free loopback port.

tests/eval/conftest.py imports them (tests/ is on sys.path: the root conftest.py is not in a package).
"""

from __future__ import annotations

import pytest

TOY_SEED, TOY_PEOPLE = 5, 16


@pytest.fixture(scope="session")
def smollm2_dir():
    from agentic_verl.cpu.models import smollm2_hf_dir

    return smollm2_hf_dir()


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_dir))


@pytest.fixture(scope="session")
def toy_world_dir(tmp_path_factory):
    from agentic_verl.data.toy_world import build_world, write_world

    out = tmp_path_factory.mktemp("toy_world")
    write_world(build_world(TOY_SEED, TOY_PEOPLE), out)
    return out


@pytest.fixture(scope="session")
def toy_index_dir(toy_world_dir, tmp_path_factory):
    from agentic_verl.retrieval.index import build_index

    out = tmp_path_factory.mktemp("toy_index") / "bm25s"
    build_index(toy_world_dir / "corpus.jsonl", out, "bm25s", show_progress=False)
    return out


@pytest.fixture(scope="session")
def toy_retrieval_url(toy_index_dir):
    from agentic_verl.retrieval.server import ServerProcess

    with ServerProcess(["--index", str(toy_index_dir)]) as server:
        yield server.url
