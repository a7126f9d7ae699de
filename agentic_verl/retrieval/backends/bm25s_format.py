"""The bm25s index format, shared by the one-folder build (bm25s_backend.py) and the sharded one (bm25s_sharded.py):
the files an index folder holds, the build options, the tokenizer both builds and `load` make, and the bm25s part of
index_meta.json. The tokenizer settings and BM25 parameters are recorded, so queries are tokenized like the corpus.
"""

from __future__ import annotations

# index folder layout: bm25s's saved retriever (one per shard folder when sharded) and the shared tokenizer
BM25_DIR = "bm25s"
TOKENIZER_DIR = "tokenizer"
OPTIONS = {
    "k1": "BM25 term-frequency saturation (1.5)",
    "b": "BM25 length normalisation (0.75)",
    "method": "BM25 variant: lucene (default), robertson, atire, bm25l, bm25+",
    "stopwords": "en (default) or none",
    "stemmer": "PyStemmer language (english, default) or none",
    "n_threads": "threads for searching large batches (default min(4, cpus))",
}


def _stemmer(language: str):
    if language in ("", "none", None):
        return None
    import Stemmer

    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        raise ValueError(f"unknown stemmer language {language!r}; known: {sorted(Stemmer.algorithms())}") from None


def make_tokenizer(stopwords: str, stemmer: str):
    from bm25s.tokenization import Tokenizer

    if stopwords not in ("en", "english", "none", ""):
        raise ValueError(f"stopwords must be 'en' or 'none', got {stopwords!r}")
    return Tokenizer(lower=True, stopwords=[] if stopwords in ("none", "") else "en", stemmer=_stemmer(stemmer))


def describe(tokenizer, stopwords: str, stemmer: str, k1: float, b: float, method: str, n_threads) -> dict:
    """The bm25s part of index_meta.json."""
    import bm25s

    return {
        "tokenizer": {"lower": True, "splitter": r"(?u)\b\w\w+\b", "stopwords": stopwords,
                      "stemmer": f"PyStemmer {stemmer}" if _stemmer(stemmer) else "none",
                      "vocab_size": len(tokenizer.get_vocab_dict()), "words": len(tokenizer.word_to_id)},
        "bm25": {"k1": float(k1), "b": float(b), "method": method, "library": f"bm25s {bm25s.__version__}"},
        "n_threads": n_threads,
    }
