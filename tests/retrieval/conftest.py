"""Retrieval fixtures: a tiny corpus, a real bm25s index of it, and the real server on a free loopback port.

Reuse them from another test folder by importing them into that folder's conftest.py
(tests/ is on sys.path because the root conftest.py is not in a package):

    from retrieval.conftest import retrieval_server, scripted_server, tiny_corpus_path, tiny_index_dir  # noqa: F401

Test modules get helpers through fixtures only (`from conftest import ...` would find whichever conftest
was imported last). `scripted_server` is a stand-in for failure modes a real index cannot produce on demand (slow answers, 5xx).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest

# (id, title, text): each has words no other passage has, so the tests know the right answer.
TINY_CORPUS = [
    ("hamlet", "Hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600."),
    ("paris", "Paris", "Paris is the capital and most populous city of France."),
    ("berlin", "Berlin", "Berlin is the capital of Germany and its largest city."),
    ("python", "Python (programming language)", "Python was created by Guido van Rossum and released in 1991."),
    ("everest", "Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas."),
    ("amazon", "Amazon River", "The Amazon River in South America is the largest river by discharge volume."),
    ("curie", "Marie Curie", "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity."),
    ("tokyo", "Tokyo", "Tokyo is the capital of Japan and one of the most populous metropolitan areas."),
    ("einstein", "Albert Einstein", "Albert Einstein developed the theory of relativity."),
    ("nile", "Nile", "The Nile is a major north-flowing river in northeastern Africa."),
    ("mozart", "Wolfgang Amadeus Mozart", "Mozart was a prolific composer of the Classical period, born in Salzburg."),
    ("unicode", "Zürich", "Zürich is the largest city in Switzerland; its name has an umlaut."),
]


def write_tiny_corpus(path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for pid, title, text in TINY_CORPUS:
            f.write(json.dumps({"id": pid, "title": title, "text": text}, ensure_ascii=False) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_corpus_path(tmp_path_factory) -> Path:
    return write_tiny_corpus(tmp_path_factory.mktemp("tiny_corpus") / "corpus.jsonl")


@pytest.fixture(scope="session")
def tiny_index_dir(tiny_corpus_path, tmp_path_factory) -> Path:
    from agentic_verl.retrieval.index import build_index

    out = tmp_path_factory.mktemp("tiny_index") / "bm25s"
    build_index(tiny_corpus_path, out, "bm25s", show_progress=False)
    return out


@pytest.fixture(scope="session")
def retrieval_server(tiny_index_dir, tmp_path_factory):
    """`agentic-verl serve retrieval --index <tiny index>` in a subprocess; yields the ServerProcess (`.url`)."""
    from agentic_verl.retrieval.server import ServerProcess

    log = tmp_path_factory.mktemp("server_log") / "server.log"
    # a loaded 2-core machine (a Ray run beside it) can take over a minute to import and load the index
    with ServerProcess(["--index", str(tiny_index_dir)], log_path=log, startup_timeout_s=240) as server:
        yield server


@contextlib.contextmanager
def serve_app_in_thread(app):
    """Run an ASGI app with uvicorn in a thread on 127.0.0.1:<free port>; yields the base URL."""
    from agentic_verl.retrieval.server import ThreadedServer

    with ThreadedServer(app, log_level="error") as server:
        yield server.url


class ScriptedServer:
    """A loopback `/retrieve` that answers as told: `status` (200 = one fixed passage per query) after `delay_s`.
    Counts requests and the most requests in flight at once."""

    def __init__(self):
        self.status, self.delay_s = 200, 0.0
        self.requests, self.in_flight, self.max_in_flight = 0, 0, 0
        self.url = ""

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def retrieve(request):
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                body = await request.json()
                await asyncio.sleep(self.delay_s)
                if self.status != 200:
                    return JSONResponse({"error": f"scripted {self.status}"}, status_code=self.status)
                result = [[{"document": {"id": "s", "contents": f"Scripted\nanswer to {q}"}, "score": 1.0}]
                          for q in body["queries"]]
                return JSONResponse({"result": result})
            finally:
                self.in_flight -= 1

        return Starlette(routes=[Route("/retrieve", retrieve, methods=["POST"])])


@pytest.fixture
def app_server():
    """`with app_server(asgi_app) as url:` runs the app on a free loopback port (uvicorn in a thread)."""
    return serve_app_in_thread


@pytest.fixture
def scripted_server():
    scripted = ScriptedServer()
    with serve_app_in_thread(scripted.app()) as url:
        scripted.url = url
        yield scripted
