"""The interface every index backend implements, the backend registry, and the meta every index records.

An index is a folder: the backend's own files plus `index_meta.json`, which records what built it
(backend, tokenizer/stemmer or model, corpus path and sha256, number of passages, build options)
so a server can say exactly what it serves. Both builds (one folder: index.py; sharded: build.py) find the backend
with `backend_class` and write the meta with `common_meta`.
"""

from __future__ import annotations

import datetime
import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path

from agentic_verl import __version__
from agentic_verl.registry import Registry, RegistryError
from agentic_verl.retrieval.protocol import Passage

BACKENDS: Registry[type[RetrievalBackend]] = Registry("retrieval backend")

META_FILE = "index_meta.json"
# The module that registers each built-in backend, imported only when that backend is used
# (lucene needs a JVM, dense needs torch + faiss).
BACKEND_MODULES = {
    "bm25s": "agentic_verl.retrieval.backends.bm25s_backend",
    "lucene": "agentic_verl.retrieval.backends.lucene",
    "dense": "agentic_verl.retrieval.backends.dense",
    "hybrid": "agentic_verl.retrieval.backends.hybrid",
}
DEFAULT_BACKEND = "bm25s"
# Keys common_meta writes; a backend's own meta may not overwrite them.
_COMMON_KEYS = ("backend", "corpus", "passages", "options", "agentic_verl_version", "built_at", "build_seconds",
                "shards")


def backend_class(name: str) -> type[RetrievalBackend]:
    """The backend registered as `name` (importing its module first), or a `module:Class` reference."""
    module = BACKEND_MODULES.get(name)
    if module is not None and name not in BACKENDS:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(f"retrieval backend {name!r} is not available: {exc}") from exc
    try:
        return BACKENDS.get(name)
    except RegistryError as exc:  # a user error: one clear line from the CLI
        # the registry knows only the backends imported so far; the built-in ones are imported on first use
        raise ValueError(f"{exc}; built in: {', '.join(BACKEND_MODULES)}") from None


def common_meta(backend_meta: dict, backend: str, corpus_path: Path, sha256: str, passages: int, options: dict,
                build_seconds: float) -> dict:
    """index_meta.json: the backend's part plus what every index records (backend, corpus, passages, ...)."""
    meta = {key: value for key, value in backend_meta.items() if key not in _COMMON_KEYS}
    meta.update(
        backend=backend,
        corpus={"path": str(corpus_path), "sha256": sha256},
        passages=passages,
        options=options,
        agentic_verl_version=__version__,
        built_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        build_seconds=round(build_seconds, 3),
    )
    return meta


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
