"""Retrieval: corpora, index backends (bm25s, lucene, dense, hybrid), the `/retrieve` server and its client."""
