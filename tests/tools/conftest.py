"""The tool tests use the retrieval fixtures (a real bm25s index, the real server on loopback, a scripted server)."""

from retrieval.conftest import (  # noqa: F401  (re-exported fixtures)
    app_server,
    retrieval_server,
    scripted_server,
    tiny_corpus_path,
    tiny_index_dir,
)
