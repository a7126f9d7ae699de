"""Sharded builds: interrupted (an injected failure, a full disk), refused when loaded, resumed to the same index."""

from __future__ import annotations

import errno
import json

import pytest
from _sharding_testlib import write_zipf_corpus

from agentic_verl.cli import main
from agentic_verl.retrieval.backends import bm25s_sharded
from agentic_verl.retrieval.build import IncompleteIndexError
from agentic_verl.retrieval.index import build_index, load_index, read_meta


class Interrupted(Exception):
    """Stands in for a killed build: raised right after the named step is recorded."""


def stop_after(step: str, seen: list[str] | None = None):
    def on_step(name: str) -> None:
        if seen is not None:
            seen.append(name)
        if name == step:
            raise Interrupted(name)

    return on_step


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_zipf_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", n=300)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The same build, never interrupted."""
    out = tmp_path_factory.mktemp("reference") / "idx"
    build_index(corpus[0], out, show_progress=False, shards=3)
    return out


def search_all(index_dir, queries):
    index = load_index(index_dir)
    try:
        return index.search(queries, 5)
    finally:
        index.close()


def test_killed_after_shard_1_refuses_to_load_then_resumes_to_the_same_index(corpus, reference, tmp_path, capsys):
    path, queries = corpus
    out = tmp_path / "idx"
    with pytest.raises(Interrupted):
        build_index(path, out, show_progress=False, shards=3, on_step=stop_after("tokenize 1"))
    resume = f"agentic-verl index build --out {out} --resume"
    with pytest.raises(IncompleteIndexError, match="unfinished index .*2 steps done, last 'tokenize 1'") as error:
        load_index(out)
    assert resume in str(error.value)
    assert main(["index", "info", str(out)]) == 2  # the CLI says the same in one line
    assert resume in capsys.readouterr().err
    with pytest.raises(ValueError, match="holds an unfinished build; resume it with"):  # a fresh build would lose it
        build_index(path, out, show_progress=False, shards=3)

    ran: list[str] = []
    meta = build_index(None, out, show_progress=False, resume=True, on_step=stop_after("", ran))
    assert ran == ["tokenize 2", "score 0", "score 1", "score 2", "tokenizer"]  # finished steps are not redone
    assert not (out / "_build").exists()
    assert meta["passages"] == 300 and meta == read_meta(out)
    assert search_all(out, queries) == search_all(reference, queries)
    assert (out / "tokenizer" / "vocab.tokenizer.json").read_bytes() == (
        reference / "tokenizer" / "vocab.tokenizer.json").read_bytes()


def test_full_disk_mid_shard_names_the_resume_command_and_resume_redoes_that_shard(corpus, reference, tmp_path,
                                                                                   monkeypatch, capsys):
    path, queries = corpus
    out = tmp_path / "idx"
    real = bm25s_sharded._score_shard

    def disk_full_in_shard_1(build, shard, *args):
        if shard == 1:
            (build.shard_dir(shard) / "bm25s").mkdir()
            (build.shard_dir(shard) / "bm25s" / "data.csc.index.npy").write_bytes(b"half")  # a half-written file
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(build, shard, *args)

    monkeypatch.setattr(bm25s_sharded, "_score_shard", disk_full_in_shard_1)
    args = ["index", "build", "--corpus", str(path), "--out", str(out), "--shards", "3", "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no space left on the device" in err and "(step 'score 1')" in err and "Traceback" not in err
    assert f"resume with: agentic-verl index build --out {out} --resume" in err
    with pytest.raises(IncompleteIndexError, match="last 'score 0'"):
        load_index(out)

    monkeypatch.setattr(bm25s_sharded, "_score_shard", real)  # space freed
    assert main(["index", "build", "--out", str(out), "--resume", "--no-progress"]) == 0
    assert "index: 300 passages (bm25s) in 3 shards" in capsys.readouterr().out
    assert search_all(out, queries) == search_all(reference, queries)


def test_resume_refuses_another_corpus_other_settings_and_finished_indexes(corpus, reference, tmp_path):
    path, _ = corpus
    out = tmp_path / "idx"
    with pytest.raises(Interrupted):
        build_index(path, out, show_progress=False, shards=3, on_step=stop_after("tokenize 0"))
    with pytest.raises(ValueError, match="shards 2 differs from the interrupted build's 3"):
        build_index(path, out, show_progress=False, shards=2, resume=True)
    with pytest.raises(ValueError, match=r"options \{'k1': 0.9\} differs"):
        build_index(path, out, show_progress=False, resume=True, k1=0.9)
    with pytest.raises(ValueError, match="backend 'dense' differs"):
        build_index(path, out, "dense", show_progress=False, resume=True)
    with open(path, "a") as f:  # the corpus changes under the build
        f.write(json.dumps({"id": "new", "contents": "T\nw1"}) + "\n")
    try:
        with pytest.raises(ValueError, match="changed since the build started"):
            build_index(None, out, show_progress=False, resume=True)
    finally:
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(ValueError, match="is a finished index; there is nothing to resume"):
        build_index(None, reference, show_progress=False, resume=True)
    with pytest.raises(FileNotFoundError, match="no unfinished build to resume"):
        build_index(None, tmp_path / "empty", show_progress=False, resume=True)


def test_backends_without_sharded_builds_say_so(corpus, tmp_path):
    with pytest.raises(ValueError, match="backend 'lucene' cannot build sharded indexes"):
        build_index(corpus[0], tmp_path / "idx", "lucene", show_progress=False, shards=2)


def test_info_prints_the_meta_and_a_serving_memory_estimate(reference, tiny_index_dir, capsys):
    assert main(["index", "info", str(reference)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == read_meta(reference)  # stdout: the meta, for scripts
    matrices = sum((reference / f"shards/{s:05d}/bm25s/{n}.csc.index.npy").stat().st_size
                   for s in range(3) for n in ("data", "indices", "indptr"))
    assert "an estimate" in captured.err and "score matrices (3 shards)" in captured.err
    assert f"{matrices / 1024:.2f} KiB" in captured.err  # the matrices are counted from their files
    assert "full speed (resident + hot)" in captured.err
    assert main(["index", "info", str(tiny_index_dir)]) == 0  # an unsharded index (the layout before shards)
    assert "bm25s vocab_dict" in capsys.readouterr().err
