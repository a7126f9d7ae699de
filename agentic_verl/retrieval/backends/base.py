"""The interface every index backend implements, and the backend registry.

An index is a folder: the backend's own files plus `index_meta.json`, which records what built it
(backend, tokenizer/stemmer or model, corpus path and sha256, number of passages, build options)
so a server can say exactly what it serves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path

from agentic_verl.registry import Registry
from agentic_verl.retrieval.protocol import Passage

BACKENDS: Registry[type[RetrievalBackend]] = Registry("retrieval backend")

META_FILE = "index_meta.json"


class RetrievalBackend(ABC):
    """A loaded, searchable index. Instances must be safe to call from one thread at a time;
    the server serialises or batches calls (see agentic_verl.retrieval.server)."""

    name: str  # the registry name, written to index_meta.json

    @classmethod
    @abstractmethod
    def build(cls, passages: Iterable[Passage], out_dir: Path, **options) -> dict:
        """Index `passages` into `out_dir`; return the backend-specific part of index_meta.json."""

    @classmethod
    @abstractmethod
    def load(cls, index_dir: Path, meta: dict) -> RetrievalBackend:
        """Open an index folder written by `build`."""

    @abstractmethod
    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        """Best-first passages for each query (batched: one call for all queries)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (JVM searchers, memory maps)."""
