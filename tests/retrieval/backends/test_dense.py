"""The dense backend with the real offline all-MiniLM-L6-v2 and faiss, on a ~200-passage corpus."""

from __future__ import annotations

import numpy as np
import pytest
from _backends_testlib import (
    DOG,
    KITTEN,
    PARAPHRASE_QUERY,
    RARE,
    built_and_opened,
    make_passages,
    results_before_and_after_reload,
    run_without,
)

from agentic_verl.retrieval.backends.dense_encoder import BGE_QUERY_INSTRUCTION, CONVENTIONS, resolve_convention
from agentic_verl.retrieval.index import build_index, load_index, read_meta

pytestmark = pytest.mark.dense


@pytest.fixture(scope="module")
def flat(corpus_path, tmp_path_factory):
    yield from built_and_opened(corpus_path, tmp_path_factory, "dense")


def test_paraphrase_ranks_first(flat):
    hits = flat.search([PARAPHRASE_QUERY], topk=5)[0]
    assert hits[0].id == KITTEN[0]  # no content word in common with the passage
    assert hits[0].score > hits[1].score
    assert flat.search(["a pet barking at the postman"], topk=1)[0][0].id == DOG[0]
    assert flat.search(["small marsupial animal on an island"], topk=1)[0][0].id == RARE[0]


def test_scores_are_cosine_similarities_best_first(flat):
    results = flat.search([PARAPHRASE_QUERY, "cider brewing town"], topk=10)
    for hits in results:
        assert len(hits) == 10
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))
        assert all(-1.0 - 1e-5 <= p.score <= 1.0 + 1e-5 for p in hits)
    assert "brewing cider" in results[1][0].contents


def test_topk_larger_than_the_corpus_returns_every_passage_once(flat):
    hits = flat.search(["anything"], topk=500)[0]
    assert len(hits) == len({p.id for p in hits}) == 203


def test_meta_and_stored_embeddings(flat):
    flat_dir = flat.path
    meta = read_meta(flat_dir)
    assert meta["backend"] == "dense" and meta["passages"] == 203
    assert meta["model"] == "sentence-transformers/all-MiniLM-L6-v2" and meta["convention"] == "none"
    assert (meta["query_prefix"], meta["passage_prefix"]) == ("", "")
    assert meta["dim"] == 384 and meta["normalized"] is True and meta["metric"] == "inner_product"
    assert meta["faiss_index"] == "flat" and not (flat_dir / "index.faiss").exists()
    embeddings = np.load(flat_dir / "embeddings.npy")
    assert embeddings.shape == (203, 384) and embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-4)
    # row i is passage i of the corpus, encoded without a prefix
    row = [pid for pid, _ in make_passages()].index(KITTEN[0])
    np.testing.assert_allclose(embeddings[row], flat.backend.encoder.passages([KITTEN[1]])[0], atol=1e-5)


def test_reload_from_disk_gives_the_same_results(flat):
    before, after = results_before_and_after_reload(flat, [PARAPHRASE_QUERY, "honey bread", "clock repair"], digits=5)
    assert after == before


@pytest.mark.parametrize(
    ("model", "convention", "expected"),
    [
        ("intfloat/e5-base-v2", "auto", "e5"),  # Search-R1's retriever, by name
        ("intfloat/multilingual-e5-small", "auto", "e5"),  # "e5" as a part of the name
        ("/models/E5-large-v2/", "auto", "e5"),  # a local folder; case and a trailing slash do not matter
        ("BAAI/bge-large-en-v1.5", "auto", "bge"),  # RAG-R1's retriever, by name
        ("bge-small-en", "auto", "bge"),
        ("sentence-transformers/all-MiniLM-L6-v2", "auto", "none"),  # no known convention
        ("my-e5less-model", "auto", "none"),  # "e5" must be a name part, not a substring
        ("BAAI/not-bge", "auto", "none"),  # bge must start the name
        ("some/model", "e5", "e5"),  # an explicit convention wins over the name
        ("BAAI/bge-large-en-v1.5", "none", "none"),
    ],
)
def test_auto_convention_from_the_model_name(model, convention, expected):
    assert resolve_convention(model, convention) == CONVENTIONS[expected]


@pytest.mark.parametrize("bad", ["colbert", "plain", "custom", "E5", 3])
def test_unknown_convention_lists_the_known_names(bad):
    with pytest.raises(ValueError, match=f"unknown convention {bad!r}; known: auto, none, e5, bge$"):
        resolve_convention("some/model", bad)


def test_unknown_faiss_index_is_an_error(corpus_path, tmp_path):
    with pytest.raises(ValueError, match="unknown faiss_index 'pq'"):
        build_index(corpus_path, tmp_path / "x", "dense", show_progress=False, faiss_index="pq")


def test_e5_prefixes_with_hnsw(corpus_path, tmp_path, flat):
    out = tmp_path / "e5"
    meta = build_index(corpus_path, out, "dense", show_progress=False, convention="e5", faiss_index="hnsw")
    assert (meta["convention"], meta["query_prefix"], meta["passage_prefix"]) == ("e5", "query: ", "passage: ")
    assert meta["faiss_index"] == "hnsw" and meta["hnsw_m"] == 32 and (out / "index.faiss").exists()
    index = load_index(out)
    try:
        encoder = index.backend.encoder
        row = [pid for pid, _ in make_passages()].index(KITTEN[0])
        stored = np.load(out / "embeddings.npy")[row]
        np.testing.assert_allclose(stored, flat.backend.encoder.passages(["passage: " + KITTEN[1]])[0], atol=1e-5)
        assert not np.allclose(stored, flat.backend.encoder.passages([KITTEN[1]])[0], atol=1e-3)
        np.testing.assert_allclose(encoder.queries(["q"])[0], flat.backend.encoder.queries(["query: q"])[0],
                                   atol=1e-5)
        assert index.backend.index.hnsw.efSearch == meta["ef_search"]
        assert index.search([PARAPHRASE_QUERY], topk=1)[0][0].id == KITTEN[0]
    finally:
        index.close()


def test_bge_query_instruction_with_ivf(corpus_path, tmp_path, flat):
    out = tmp_path / "bge"
    meta = build_index(corpus_path, out, "dense", show_progress=False, convention="bge", faiss_index="ivf",
                       ivf_nlist=4, ivf_nprobe=4)
    assert meta["convention"] == "bge"
    assert meta["query_prefix"] == BGE_QUERY_INSTRUCTION == "Represent this sentence for searching relevant passages: "
    assert meta["passage_prefix"] == "" and (meta["ivf_nlist"], meta["ivf_nprobe"]) == (4, 4)
    np.testing.assert_allclose(np.load(out / "embeddings.npy"), np.load(flat.path / "embeddings.npy"), atol=1e-5)
    index = load_index(out)
    try:
        assert index.backend.index.nprobe == 4  # all cells: exact, so the same ranking as flat
        np.testing.assert_allclose(index.backend.encoder.queries(["q"])[0],
                                   flat.backend.encoder.queries([BGE_QUERY_INSTRUCTION + "q"])[0], atol=1e-5)
        assert index.search([PARAPHRASE_QUERY], topk=1)[0][0].id == KITTEN[0]
    finally:
        index.close()


@pytest.mark.parametrize("blocked", ["faiss", "sentence_transformers"])
def test_missing_extra_names_the_pip_command(corpus_path, tmp_path, blocked):
    result = run_without([blocked], f'build_index({str(corpus_path)!r}, {str(tmp_path / "x")!r}, "dense", '
                                    "show_progress=False)")
    assert result.returncode == 0, result.stderr
    assert "ERROR:" in result.stdout and "pip install 'agentic_verl[dense]'" in result.stdout
    assert blocked in result.stdout


def test_cli_faiss_index_flag(tmp_path):
    from _backends_testlib import write_corpus

    from agentic_verl.cli import main

    corpus = write_corpus(tmp_path / "small.jsonl", make_passages(n_filler=27))
    code = main(["index", "build", "--backend", "dense", "--corpus", str(corpus), "--out", str(tmp_path / "ix"),
                 "--faiss-index", "hnsw", "--no-progress"])
    assert code == 0
    meta = read_meta(tmp_path / "ix")
    assert meta["faiss_index"] == "hnsw" and meta["options"] == {"faiss_index": "hnsw"} and meta["passages"] == 30
