"""Index backends. Each module registers a `RetrievalBackend` subclass in `BACKENDS` by name."""

from agentic_verl.retrieval.backends.base import BACKENDS, RetrievalBackend

__all__ = ["BACKENDS", "RetrievalBackend"]
