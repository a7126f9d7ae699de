"""`agentic-verl index build|info|search`, `data wiki-split`, `serve retrieval`: real files, real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from agentic_verl.cli import main
from agentic_verl.retrieval.server import ServerProcess

CORPUS = [("hamlet", "Hamlet", "Hamlet is a tragedy by William Shakespeare."),
          ("paris", "Paris", "Paris is the capital of France."),
          ("nile", "Nile", "The Nile is a river in Africa.")]


def write_corpus(path):
    path.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS))
    return path


def test_index_build_info_search(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    out = tmp_path / "idx"
    assert main(["index", "build", "--corpus", str(corpus), "--out", str(out), "--no-progress",
                 "-o", "k1=0.9", "-o", "stemmer=english"]) == 0
    printed = capsys.readouterr().out
    assert "index: 3 passages (bm25s)" in printed
    meta = json.loads((out / "index_meta.json").read_text())
    assert meta["options"] == {"k1": 0.9, "stemmer": "english"}  # -o values parsed as JSON when they are JSON

    assert main(["index", "info", str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == meta

    assert main(["index", "search", str(out), "capital of france", "--topk", "1"]) == 0
    assert "Doc 1 (Title: Paris) Paris is the capital of France." in capsys.readouterr().out


def test_index_build_user_errors_are_one_line_exit_2(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    cases = [
        (["--corpus", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "a")], "does not exist"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "b"), "--backend", "nope"], "unknown retrieval backend 'nope'"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "c"), "-o", "k1"], "expected KEY=VALUE"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "d"), "-o", "k9=1"], "unknown bm25s option(s) ['k9']"),
        (["--out", str(tmp_path / "e")], "needs --corpus and --out"),
    ]
    for args, phrase in cases:
        assert main(["index", "build", "--no-progress", *args]) == 2, args
        err = capsys.readouterr().err
        assert phrase in err and "Traceback" not in err, (args, err)


def test_index_build_lists_backend_options(capsys):
    assert main(["index", "build", "--backend", "bm25s", "--list-options"]) == 0
    assert "k1" in capsys.readouterr().out


def test_data_wiki_split(tmp_path, capsys):
    articles = tmp_path / "wiki.jsonl"
    articles.write_text(json.dumps({"title": "A", "text": " ".join(["word"] * 150)}) + "\n")
    assert main(["data", "wiki-split", "--input", str(articles), "--out", str(tmp_path / "c.jsonl"),
                 "--no-progress"]) == 0
    assert "1 articles (0 empty, skipped) -> 2 passages" in capsys.readouterr().out
    lines = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert [line["contents"].split("\n")[0] for line in lines] == ["A", "A"]


def test_serve_retrieval_prints_the_meta_and_serves(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    assert main(["index", "build", "--corpus", str(corpus), "--out", str(tmp_path / "idx"), "--no-progress"]) == 0
    log = tmp_path / "server.log"
    with ServerProcess(["--index", str(tmp_path / "idx"), "--max-topk", "2", "--cache-size", "0"],
                       log_path=log) as server:
        response = httpx.post(server.url + "/retrieve", json={"queries": ["river in africa"], "topk": 3},
                              trust_env=False)
        assert response.status_code == 422 and "between 1 and 2" in response.json()["error"]
        assert httpx.get(server.url + "/health", trust_env=False).json()["cache"]["size"] == 0
    printed = log.read_text()
    assert '"backend": "bm25s"' in printed and f"on http://127.0.0.1:{server.port}" in printed


def test_serve_retrieval_needs_an_index_or_a_replay_file(tmp_path):
    run = lambda *args: subprocess.run([sys.executable, "-m", "agentic_verl.cli", "serve", "retrieval", *args],  # noqa: E731
                                       capture_output=True, text=True, timeout=120)
    proc = run()
    assert proc.returncode == 2 and "one of the arguments --index --replay is required" in proc.stderr
    proc = run("--index", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "is not an index folder" in proc.stderr
