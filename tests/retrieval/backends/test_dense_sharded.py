"""Sharded dense indexes with the real offline MiniLM and faiss: IVF-PQ and flat shards merge like one index,
and an interrupted build resumes without re-encoding. One encoding of a ~60-passage corpus serves every test."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from _backends_testlib import KITTEN, PARAPHRASE_QUERY, make_passages, write_corpus

from agentic_verl.retrieval.backends.dense_format import sample_rows
from agentic_verl.retrieval.backends.faiss_indexes import add_in_chunks, index_settings, new_index
from agentic_verl.retrieval.build import IncompleteIndexError
from agentic_verl.retrieval.index import build_index, load_index

pytestmark = pytest.mark.dense

QUERIES = [PARAPHRASE_QUERY, "cider brewing town", "honey bread", "clock repair", "small marsupial"]
# tiny PQ codebooks: a 63-passage corpus cannot train 256 centroids per sub-quantizer
IVFPQ = {"faiss_index": "ivfpq", "ivf_nlist": 2, "ivf_nprobe": 2, "pq_m": 2, "pq_nbits": 4}


class Interrupted(Exception):
    pass


@pytest.fixture(scope="module")
def ivfpq_dir(tmp_path_factory):
    """A 3-shard IVF-PQ index whose build was interrupted after training, then resumed (returns the steps redone)."""
    folder = tmp_path_factory.mktemp("dense_sharded")
    corpus = write_corpus(folder / "corpus.jsonl", make_passages(n_filler=60))
    out = folder / "ivfpq"

    def stop_after_train(name):
        if name == "train":
            raise Interrupted(name)

    with pytest.raises(Interrupted):
        build_index(corpus, out, "dense", show_progress=False, shards=3, on_step=stop_after_train, **IVFPQ)
    with pytest.raises(IncompleteIndexError, match="--resume"):
        load_index(out)
    redone: list[str] = []
    build_index(None, out, show_progress=False, resume=True, on_step=redone.append)
    return out, redone


def by_score(pairs):
    groups: dict[float, set[str]] = {}
    for pid, score in pairs:
        groups.setdefault(round(float(score), 5), set()).add(pid)
    cutoff = min(groups) if groups else None
    return {score: ids for score, ids in groups.items() if score != cutoff}


def all_embeddings(index_dir):
    meta = json.loads((index_dir / "index_meta.json").read_text())
    return np.concatenate([np.load(index_dir / s["dir"] / "embeddings.npy") for s in meta["shards"]]), meta


def test_resume_after_training_only_builds_the_shard_indexes(ivfpq_dir):
    _, redone = ivfpq_dir
    assert redone == ["faiss 0", "faiss 1", "faiss 2"]  # no passage encoded twice


def test_sharded_ivfpq_equals_one_ivfpq_index_over_the_same_vectors(ivfpq_dir):
    out, _ = ivfpq_dir
    vectors, meta = all_embeddings(out)
    assert vectors.shape == (63, 384) and [s["passages"] for s in meta["shards"]] == [21, 21, 21]
    assert (meta["faiss_index"], meta["pq_m"], meta["pq_nbits"], meta["train_size"]) == ("ivfpq", 2, 4, 63)
    # one unsharded index: same settings, same training sample -> the same quantizer the shards share
    settings = index_settings("ivfpq", 384, len(vectors), **{k: v for k, v in IVFPQ.items() if k != "faiss_index"})
    single = new_index(settings, 384, lambda n: vectors[sample_rows(len(vectors), n)])
    add_in_chunks(single, vectors)
    single.nprobe = 2
    index = load_index(out)
    try:
        queries = index.backend.encoder.queries(QUERIES)
        scores, rows = single.search(queries, 5)
        corpus_ids = [pid for pid, _ in make_passages(n_filler=60)]
        got = index.search(QUERIES, 5)
        np.testing.assert_allclose([[p.score for p in hits] for hits in got], scores, rtol=1e-5, atol=1e-6)
        for hits, want_rows, want_scores in zip(got, rows, scores, strict=True):
            # quantized scores tie often: ids may swap within a tie, the last tie group may be cut differently
            assert by_score([(p.id, p.score) for p in hits]) == by_score(
                [(corpus_ids[r], s) for r, s in zip(want_rows, want_scores, strict=True)])
        assert got[0][0].id == KITTEN[0]
    finally:
        index.close()


def test_flat_shards_search_the_memory_mapped_embeddings_exactly(ivfpq_dir, tmp_path):
    faiss = pytest.importorskip("faiss")
    out, _ = ivfpq_dir
    # the same shards read as flat: embeddings.npy is kept so another index type needs no re-encoding
    flat_dir = tmp_path / "flat"
    shutil.copytree(out, flat_dir)
    meta = json.loads((flat_dir / "index_meta.json").read_text())
    (flat_dir / "index_meta.json").write_text(json.dumps({**meta, "faiss_index": "flat"}))
    vectors, _ = all_embeddings(flat_dir)
    exact = faiss.IndexFlatIP(384)
    exact.add(vectors)
    index = load_index(flat_dir)
    try:
        queries = index.backend.encoder.queries(QUERIES)
        scores, rows = exact.search(queries, 7)
        got = index.search(QUERIES, 7)
        corpus_ids = [pid for pid, _ in make_passages(n_filler=60)]
        assert [[p.id for p in hits] for hits in got] == [[corpus_ids[r] for r in rr] for rr in rows]
        np.testing.assert_allclose([[p.score for p in hits] for hits in got], scores, rtol=1e-5, atol=1e-6)
        # each shard's rows are its passages, in corpus order: encoding them again gives the stored vectors
        contents = [text for _, text in make_passages(n_filler=60)]
        np.testing.assert_allclose(vectors, index.backend.encoder.passages(contents), atol=1e-5)
    finally:
        index.close()
