"""RetrievalService: micro-batching, cache, backend failures, record/replay (the last over real servers)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import httpx
import pytest

from agentic_verl.retrieval.backends.base import RetrievalBackend
from agentic_verl.retrieval.index import Index, load_index
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.server import ServerProcess, create_app
from agentic_verl.retrieval.service import Limits, RequestError, RetrievalService


class GatedBackend(RetrievalBackend):
    """Blocks its first search until released, so later requests pile up in the queue; records every call."""

    name = "gated"

    def __init__(self, fail: bool = False):
        self.calls: list[tuple[list[str], int]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.fail = fail

    @classmethod
    def build(cls, passages, out_dir, **options):
        raise NotImplementedError

    @classmethod
    def load(cls, index_dir, meta):
        raise NotImplementedError

    def search(self, queries, topk):
        self.calls.append((list(queries), topk))
        self.entered.set()
        self.release.wait(timeout=30)
        if self.fail:
            raise RuntimeError("disk on fire")
        return [[Passage(f"{q}-{i}", f"T\n{q} {i}", float(topk - i)) for i in range(topk)] for q in queries]


def gated_service(backend: GatedBackend, **kwargs) -> RetrievalService:
    return RetrievalService(Index(path=Path("."), meta={"backend": "gated"}, backend=backend), **kwargs)


async def test_pending_requests_are_batched_into_one_backend_call():
    backend = GatedBackend()
    service = gated_service(backend)
    try:
        first = asyncio.create_task(service.search(["a"], topk=1))
        await asyncio.to_thread(backend.entered.wait, 10)  # the worker is inside the first search
        rest = [asyncio.create_task(service.search(q, topk=k))
                for q, k in ((["b", "c"], 2), (["c", "d"], 3), (["e"], 1))]
        await asyncio.sleep(0.2)  # let them reach the queue
        backend.release.set()
        results = await asyncio.gather(first, *rest)
    finally:
        service.close()
    # one call for the first request, ONE call for the three waiting ones: deduplicated, at the largest topk
    assert backend.calls == [(["a"], 1), (["b", "c", "d", "e"], 3)]
    assert [[p.id for p in ps] for ps in results[2]] == [["c-0", "c-1", "c-2"], ["d-0", "d-1", "d-2"]]
    assert [[p.id for p in ps] for ps in results[1]] == [["b-0", "b-1"], ["c-0", "c-1"]]  # cut to its own topk
    snapshot = service.metrics.snapshot()
    assert snapshot["backend_calls"] == 2
    assert snapshot["batches"]["requests_per_backend_call"]["le_4"] == 1


async def test_cache_answers_repeated_queries_without_the_backend():
    backend = GatedBackend()
    backend.release.set()
    service = gated_service(backend, cache_size=2)
    try:
        await service.search(["a", "b"], topk=2)
        await service.search(["a", "b", "a"], topk=2)  # both cached
        await service.search(["a"], topk=3)  # another topk is another key
        await service.search(["c"], topk=2)  # evicts the least recently used
        await service.search(["b"], topk=2)  # evicted -> backend again
    finally:
        service.close()
    assert backend.calls == [(["a", "b"], 2), (["a"], 3), (["c"], 2), (["b"], 2)]
    assert service.metrics.counters["cache_hits"] == 2


async def test_validation_applies_in_process_too():
    backend = GatedBackend()
    service = gated_service(backend, limits=Limits(max_queries=2, max_topk=5))
    try:
        for queries, topk, phrase in ((["a", "b", "c"], 1, "limit is 2"), (["a"], 6, "between 1 and 5"),
                                      ("a", 1, "list of strings"), ([""], 1, "queries[0] is empty"),
                                      (["ok", "x\ud800"], 1, "queries[1] is not valid Unicode")):
            with pytest.raises(RequestError, match=re.escape(phrase)):
                await service.search(queries, topk)
    finally:
        service.close()
    assert backend.calls == []


def test_backend_exception_is_a_500_and_the_server_keeps_serving(app_server):
    backend = GatedBackend(fail=True)
    backend.release.set()
    service = gated_service(backend)
    with app_server(create_app(service)) as url:
        response = httpx.post(url + "/retrieve", json={"queries": ["a"]}, trust_env=False, timeout=10)
        assert response.status_code == 500
        assert response.json()["error"] == "retrieval failed: RuntimeError: disk on fire"
        backend.fail = False
        assert httpx.post(url + "/retrieve", json={"queries": ["a"], "topk": 1}, trust_env=False,
                          timeout=10).json()["result"] == [[{"id": "a-0", "contents": "T\na 0"}]]
        health = httpx.get(url + "/health", trust_env=False)
        assert health.status_code == 200
        assert service.metrics.counters["backend_errors"] == 1
    service.close()


def test_record_then_replay_without_the_index(tiny_index_dir, tmp_path):
    record = tmp_path / "eval_cache.jsonl"
    queries = ["who wrote hamlet", "capital of germany", "Nile Africa"]

    def ask(url, qs, topk):
        return httpx.post(url + "/retrieve", json={"queries": qs, "topk": topk, "return_scores": True},
                          trust_env=False, timeout=30)

    with ServerProcess(["--index", str(tiny_index_dir), "--record", str(record)]) as server:
        recorded = ask(server.url, queries, 3).json()
        ask(server.url, queries[:1], 3)  # cached: recorded once
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert lines[0]["_meta"]["backend"] == "bm25s"
    assert [(line["query"], line["topk"]) for line in lines[1:]] == [(q, 3) for q in queries]

    with ServerProcess(["--replay", str(record)]) as server:
        health = httpx.get(server.url + "/health", trust_env=False).json()
        assert health["mode"] == "replay" and health["index"]["passages"] == 12
        assert ask(server.url, queries, 3).json() == recorded
        # a smaller topk is a prefix of a recorded larger one
        assert ask(server.url, queries[1:2], 1).json()["result"] == [recorded["result"][1][:1]]
        missing = ask(server.url, ["an unrecorded question"], 3)
        assert missing.status_code == 404
        assert "'an unrecorded question' (topk=3) was not recorded" in missing.json()["error"]
        assert ask(server.url, queries, 5).status_code == 404  # a larger topk was never recorded
        assert httpx.get(server.url + "/health", trust_env=False).status_code == 200


def test_in_process_service_over_a_real_index(tiny_index_dir):
    service = RetrievalService(load_index(tiny_index_dir))
    try:
        assert [ps[0].id for ps in service.search_sync(["Guido van Rossum language", "Tokyo Japan"], 1)] == [
            "python", "tokyo"]
    finally:
        service.close()
    assert not service.healthy()
    with pytest.raises(RequestError, match="closed"):  # not a request that waits forever
        service.search_sync(["Tokyo"], 1)


def test_replay_and_record_cannot_be_combined(tmp_path):
    (tmp_path / "r.jsonl").write_text("")
    with pytest.raises(ValueError, match="cannot be combined"):
        RetrievalService(replay=tmp_path / "r.jsonl", record=tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="exactly one"):
        RetrievalService()


def test_recording_into_a_file_from_another_index_is_refused(tiny_index_dir, tiny_corpus_path, tmp_path):
    from agentic_verl.retrieval.index import build_index

    record = tmp_path / "r.jsonl"
    service = RetrievalService(load_index(tiny_index_dir), record=record)
    service.search_sync(["Nile"], 1)
    service.close()
    service = RetrievalService(load_index(tiny_index_dir), record=record)  # same index: appends
    service.search_sync(["Nile", "Tokyo"], 1)
    service.close()
    assert [json.loads(line).get("query") for line in record.read_text().splitlines()] == [None, "Nile", "Tokyo"]
    other = tmp_path / "other"
    build_index(tiny_corpus_path, other, show_progress=False, k1=1.1)
    with pytest.raises(ValueError, match="was recorded from another index"):
        RetrievalService(load_index(other), record=record)
