"""`agentic-verl index encode` on a local Ray (2 CPU workers, the offline MiniLM, e5 prefixes) and
`index build --backend dense --embeddings DIR`. One Ray start and one interrupted-then-resumed encode for the module
(`encoded`): its vectors and an index built from them equal an in-process dense build's; it resumed only the
missing shards while a worker was killed; another model, corpus, convention or shard size is refused."""

from __future__ import annotations

import json
import shutil
import tempfile

import numpy as np
import pytest

from agentic_verl.cli import main
from agentic_verl.cpu.cleanup import processes_mentioning, stop_processes
from agentic_verl.retrieval.backends.dense_encoder import CONVENTIONS, DEFAULT_MODEL, Encoder
from agentic_verl.retrieval.corpus import file_sha256, read_corpus
from agentic_verl.retrieval.embeddings import Embeddings, open_shard
from agentic_verl.retrieval.encode import encode_corpus
from agentic_verl.retrieval.index import build_index, load_index

pytestmark = [pytest.mark.dense, pytest.mark.slow]  # a Ray cluster and 5 workers loading MiniLM

QUERIES = ["who wrote hamlet", "capital of france", "largest river", "radioactivity research", "city in Switzerland"]


class Crash(Exception):
    """Stands in for a driver killed right after the named number of shards were recorded."""


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    ray_dir = tempfile.mkdtemp(prefix="avenc", dir="/tmp")  # Ray's socket paths must fit in 107 bytes
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", "disabled")
        env.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=2, _temp_dir=ray_dir, include_dashboard=False, object_store_memory=200 * 2**20,
                 log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()
            stop_processes(processes_mentioning(ray_dir))
            shutil.rmtree(ray_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def corpus(tiny_corpus_path, tmp_path_factory):
    """The 12-passage tiny corpus, copied (the crash test edits it for a while)."""
    path = tmp_path_factory.mktemp("encode_corpus") / "corpus.jsonl"
    shutil.copy(tiny_corpus_path, path)
    return path


@pytest.fixture(scope="module")
def direct(corpus, tmp_path_factory):
    """`index build --backend dense --convention e5` encoding in process: the reference."""
    out = tmp_path_factory.mktemp("direct") / "idx"
    build_index(corpus, out, "dense", show_progress=False, convention="e5")
    return out


@pytest.fixture(scope="module")
def encoded(ray_cluster, corpus, tmp_path_factory):
    """The run every test reads: 2 Ray workers encode 12 one-passage shards and the driver crashes after 4; the
    crash leaves a half-written temporary file, and a finished shard is damaged on disk; a resume is refused while
    the corpus differs; then the resume runs and one worker is killed after its first shard.
    Returns the folder and what was seen along the way (errors as their messages)."""
    ray, out = ray_cluster, tmp_path_factory.mktemp("encoded") / "emb"
    recorded: list[int] = []

    def crash_after_4(shard):
        recorded.append(shard)
        if len(recorded) == 4:
            raise Crash(shard)

    with pytest.raises(Crash):
        encode_corpus(corpus, DEFAULT_MODEL, out, convention="e5", workers=2, shard_size=1, show_progress=False,
                      on_shard=crash_after_4)
    done = sorted(recorded)
    missing = [s for s in range(12) if s not in done]
    seen = {"done": done, "missing": missing, "unfinished": error_of(lambda: Embeddings(out)),
            "build": error_of(lambda: build_index(corpus, out.parent / "idx", "dense", embeddings=str(out)))}
    # a crash while writing shard m leaves m.npy.tmp (never read); a finished shard's file is cut short on disk
    (out / f"{missing[0]:05d}.npy.tmp").write_bytes((out / f"{done[1]:05d}.npy").read_bytes()[:300])
    damaged = out / f"{done[0]:05d}.npy"
    damaged.write_bytes(damaged.read_bytes()[:400])
    seen["damaged"] = error_of(lambda: open_shard(out, done[0], json.loads((out / "manifest.json").read_text())))
    seen["kept"] = {s: (out / f"{s:05d}.npy").stat().st_mtime_ns for s in done[1:]}
    original = corpus.read_bytes()
    corpus.write_bytes(original + json.dumps({"id": "new", "contents": "New\ntext"}).encode() + b"\n")
    try:
        seen["changed"] = error_of(lambda: encode_corpus(None, None, out, resume=True, show_progress=False))
    finally:
        corpus.write_bytes(original)

    old_actors = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)}

    def kill_a_worker(shard):
        if "killed" not in seen:  # after the first shard: 8 are still to be sent, some of them to the killed worker
            actor = next(a for a in ray.util.list_named_actors(all_namespaces=True)
                         if a["name"].startswith("encode-") and a["name"] not in old_actors)
            ray.kill(ray.get_actor(actor["name"], namespace=actor["namespace"]))
            seen["killed"] = actor["name"]

    seen["summary"] = encode_corpus(None, None, out, resume=True, workers=2, show_progress=False,
                                    on_shard=kill_a_worker)
    return out, seen


def error_of(call) -> str | None:
    try:
        call()
    except (ValueError, FileNotFoundError) as exc:
        return str(exc)
    return None


def top5(index_dir):
    index = load_index(index_dir)
    try:
        return [[(p.id, p.score) for p in hits] for hits in index.search(QUERIES, 5)], index.meta
    finally:
        index.close()


def assert_same_hits(got, want):
    for got_hits, want_hits in zip(got, want, strict=True):
        assert [pid for pid, _ in got_hits] == [pid for pid, _ in want_hits]
        np.testing.assert_allclose([s for _, s in got_hits], [s for _, s in want_hits], atol=1e-5)


def test_ray_workers_encode_what_the_dense_build_encodes(encoded, direct, corpus):
    encoded, _ = encoded
    manifest = json.loads((encoded / "manifest.json").read_text())
    assert (manifest["model"], manifest["convention"], manifest["passage_prefix"]) == (DEFAULT_MODEL, "e5", "passage: ")
    assert manifest["dim"] == 384 and manifest["normalized"] is True
    assert manifest["corpus"] == {"path": str(corpus), "sha256": file_sha256(corpus), "passages": 12}
    ids = [p.id for p in read_corpus(corpus)]
    assert [(s["start"], s["rows"], s["done"], s["first_id"]) for s in manifest["shards"]] == [
        (i, 1, True, pid) for i, pid in enumerate(ids)]
    vectors = Embeddings(encoded)[0:12]
    np.testing.assert_allclose(vectors, np.load(direct / "embeddings.npy"), atol=1e-5)
    # the e5 passage prefix was applied: plain text gives other vectors
    plain = Encoder(DEFAULT_MODEL, CONVENTIONS["none"]).passages([p.contents for p in read_corpus(corpus)])
    assert np.abs(vectors - plain).max() > 1e-2


def test_index_built_from_the_embeddings_searches_like_the_direct_build(encoded, direct, corpus, tmp_path, capsys):
    encoded, _ = encoded
    want, direct_meta = top5(direct)
    out = tmp_path / "flat"
    args = ["index", "build", "--corpus", str(corpus), "--out", str(out), "--backend", "dense", "--no-progress"]
    assert main([*args, "--embeddings", str(encoded)]) == 0
    assert "convention e5: query prefix 'query: '" in capsys.readouterr().out
    got, meta = top5(out)
    assert_same_hits(got, want)
    for key in ("model", "convention", "query_prefix", "passage_prefix", "dim", "faiss_index"):
        assert meta[key] == direct_meta[key], key  # serving encodes queries as the direct index does
    assert meta["embeddings_source"] == str(encoded)
    # sharded, another faiss index, shard bounds that cut across the encode shards
    meta = build_index(corpus, tmp_path / "hnsw", "dense", show_progress=False, shards=5, faiss_index="hnsw",
                       embeddings=str(encoded))
    assert meta["faiss_index"] == "hnsw" and len(meta["shards"]) == 5
    assert_same_hits(top5(tmp_path / "hnsw")[0], want)


def test_build_refuses_embeddings_of_another_model_convention_or_corpus(encoded, corpus, tmp_path, capsys):
    encoded, _ = encoded
    args = ["index", "build", "--corpus", str(corpus), "--out", str(tmp_path / "idx"), "--backend", "dense",
            "--embeddings", str(encoded), "--no-progress"]
    assert main([*args, "-o", "model=intfloat/e5-base-v2"]) == 2
    assert "was encoded with model 'sentence-transformers/all-MiniLM-L6-v2', not 'intfloat/e5-base-v2'" in (
        capsys.readouterr().err)
    assert main([*args, "--convention", "none"]) == 2
    assert "was encoded with convention 'e5'" in capsys.readouterr().err
    other = tmp_path / "other.jsonl"
    other.write_bytes(corpus.read_bytes().replace(b"Hamlet is", b"Hamlet was"))
    args[3] = str(other)
    assert main(args) == 2  # unsharded: the CLI compares the corpus fingerprint
    assert "holds the vectors of another corpus" in capsys.readouterr().err
    with pytest.raises(ValueError, match="holds the vectors of another corpus"):  # sharded: the build's plan does
        build_index(other, tmp_path / "sharded", "dense", show_progress=False, shards=2, embeddings=str(encoded))
    assert not (tmp_path / "idx").exists() and not (tmp_path / "sharded" / "index_meta.json").exists()


def test_resume_refuses_another_model_corpus_convention_or_shard_size(encoded, corpus, tmp_path, capsys):
    encoded, _ = encoded
    resume = ["index", "encode", "--out", str(encoded), "--resume", "--no-progress"]
    other = tmp_path / "other.jsonl"
    other.write_bytes(corpus.read_bytes())
    for extra, message in [
        (["--model", "intfloat/e5-base-v2"], "is encoded with model 'sentence-transformers/all-MiniLM-L6-v2', not"),
        (["--corpus", str(other)], f"encodes {corpus}, not {other}"),
        (["--convention", "none"], "is encoded with convention 'e5', not 'none'"),
        (["--shard-size", "4"], "has shards of 1 passages, not 4"),
    ]:
        assert main([*resume, *extra]) == 2, extra
        assert message in capsys.readouterr().err
    new_run = ["index", "encode", "--corpus", str(corpus), "--model", DEFAULT_MODEL, "--out", str(encoded)]
    assert main(new_run) == 2  # it would overwrite the folder
    assert "holds an encode run already; finish it with: agentic-verl index encode --out" in capsys.readouterr().err
    assert main(resume) == 0  # nothing left to encode: no worker is started
    printed = capsys.readouterr().out
    assert '"skipped": 12' in printed and "0 shard(s) encoded now, 12 already done" in printed


def test_an_interrupted_run_is_refused_then_resumes_only_the_missing_shards(encoded):
    out, seen = encoded
    resume = f"agentic-verl index encode --out {out} --resume"
    assert seen["unfinished"].startswith(f"{out} is unfinished: 4 of 12 shards encoded") and resume in seen["unfinished"]
    assert seen["build"] == seen["unfinished"]  # index build --embeddings refuses it the same way
    assert "is damaged or half-written" in seen["damaged"] and resume in seen["damaged"]
    assert "changed (or is gone) since" in seen["changed"]
    summary = seen["summary"]
    assert sorted(summary["encoded"]) == sorted([seen["done"][0], *seen["missing"]])  # + the damaged one
    assert summary["skipped"] == 3 and summary["workers"] == 2 and summary["devices"] == ["cpu"]
    assert "killed" in seen and summary["workers_replaced"] == 1  # its shards went to its replacement
    assert {s: (out / f"{s:05d}.npy").stat().st_mtime_ns for s in seen["done"][1:]} == seen["kept"]
    assert not list(out.glob("*.tmp"))
