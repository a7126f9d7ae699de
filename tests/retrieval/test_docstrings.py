"""The runnable examples in the retrieval modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "agentic_verl.retrieval.formatting",
    "agentic_verl.retrieval.corpus",
    "agentic_verl.retrieval.docstore",
    "agentic_verl.retrieval.wiki_split",
    "agentic_verl.retrieval.index",
    "agentic_verl.retrieval.shards",
    "agentic_verl.retrieval.ranking",
    "agentic_verl.retrieval.backends.lucene",
    "agentic_verl.retrieval.footprint",
    "agentic_verl.retrieval.backends.faiss_indexes",
    "agentic_verl.retrieval.backends.dense_encoder",
    "agentic_verl.retrieval.service",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
