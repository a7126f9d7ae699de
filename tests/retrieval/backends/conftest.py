"""Fixtures for the backend tests; the corpus itself is described in _backends_testlib.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from _backends_testlib import make_passages, write_corpus


@pytest.fixture(scope="session")
def corpus_path(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", make_passages())
