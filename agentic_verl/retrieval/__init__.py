"""Retrieval: corpora, index backends (bm25s, lucene, dense, hybrid), the `/retrieve` server and its client.

- protocol.Passage, client.RetrievalClient / RetrievalError, formatting.format_passages: what tools and agent
  loops use (light imports);
- corpus (JSONL passages), wiki_split, index.build_index / load_index, backends/ (one module per backend),
  docstore (memory-mapped passages);
- service.RetrievalService (validation, micro-batching, cache, record/replay, metrics) and server (HTTP on top).

The names below are importable from `agentic_verl.retrieval`; the client, index and service load on first use (so
that `agentic_verl.retrieval.auth`, standard library only, also imports where aiohttp is missing: `.venv-bfcl`).
"""

from agentic_verl.retrieval.formatting import format_passages
from agentic_verl.retrieval.protocol import Passage

_LAZY = {
    "RetrievalClient": "agentic_verl.retrieval.client",
    "RetrievalError": "agentic_verl.retrieval.client",
    "build_index": "agentic_verl.retrieval.index",
    "load_index": "agentic_verl.retrieval.index",
    "RetrievalService": "agentic_verl.retrieval.service",
    "ServerProcess": "agentic_verl.retrieval.server",
}

__all__ = ["Passage", "format_passages", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentic_verl.retrieval' has no attribute {name!r}")
