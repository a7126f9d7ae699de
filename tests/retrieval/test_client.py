"""RetrievalClient against the real server and against a scripted loopback server (slow answers, 5xx)."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentic_verl.net import free_port
from agentic_verl.retrieval.client import RetrievalClient, RetrievalError
from agentic_verl.retrieval.protocol import Passage


async def test_retrieve_returns_passages_per_query(retrieval_server):
    client = RetrievalClient(retrieval_server.url)
    try:
        results = await client.retrieve(["Marie Curie radioactivity", "largest city in Switzerland"], topk=2)
    finally:
        await client.aclose()
    assert [passages[0].id for passages in results] == ["curie", "unicode"]
    assert results[1][0].title == "Zürich"
    assert all(isinstance(p, Passage) and p.score > 0 for passages in results for p in passages)


async def test_url_may_include_the_path_and_empty_query_list_sends_nothing(retrieval_server):
    client = RetrievalClient(retrieval_server.url + "/retrieve/")
    try:
        assert await client.retrieve([]) == []
        assert (await client.retrieve(["Amazon river discharge"], topk=1))[0][0].id == "amazon"
    finally:
        await client.aclose()


def test_one_client_works_across_event_loops(retrieval_server):
    # verl runs agent loops in several event loops; the client makes one httpx client per loop
    client = RetrievalClient(retrieval_server.url)
    for _ in range(2):
        assert asyncio.run(client.retrieve(["Everest Himalayas"], topk=1))[0][0].id == "everest"


@pytest.mark.parametrize(("status", "max_retries", "category", "message_parts", "requests"), [
    (422, 3, "bad_arguments", ["scripted 422"], 1),  # a 4xx is bad arguments, not retried
    (503, 2, "server_error", ["503", "after 3 attempts"], 3),  # a 5xx is retried, then a server error
])
async def test_http_errors_are_categorised_and_only_5xx_retried(scripted_server, status, max_retries, category,
                                                                message_parts, requests):
    scripted_server.status = status
    client = RetrievalClient(scripted_server.url, max_retries=max_retries, backoff_s=0.01)
    with pytest.raises(RetrievalError) as info:
        await client.retrieve(["q"])
    await client.aclose()
    assert info.value.category == category
    assert all(part in str(info.value) for part in message_parts), str(info.value)
    assert scripted_server.requests == requests


async def test_slow_server_is_a_timeout_after_retries(scripted_server):
    scripted_server.delay_s = 3.0
    client = RetrievalClient(scripted_server.url, timeout_s=0.2, max_retries=1, backoff_s=0.05)
    started = time.monotonic()
    with pytest.raises(RetrievalError) as info:
        await client.retrieve(["q"])
    await client.aclose()
    assert info.value.category == "timeout"
    assert scripted_server.requests == 2
    assert time.monotonic() - started < 2.5  # 2 x 0.2 s + 0.05 s backoff, not the server's 3 s


async def test_connection_refused_is_server_error():
    client = RetrievalClient(f"http://127.0.0.1:{free_port()}", max_retries=1, backoff_s=0.01)
    with pytest.raises(RetrievalError) as info:
        await client.retrieve(["q"])
    assert info.value.category == "server_error"
    assert "cannot reach" in str(info.value)


async def test_concurrency_is_limited(scripted_server):
    scripted_server.delay_s = 0.1
    client = RetrievalClient(scripted_server.url, max_concurrency=3)
    results = await asyncio.gather(*(client.retrieve([f"q{i}"]) for i in range(12)))
    await client.aclose()
    assert [r[0][0].contents for r in results] == [f"Scripted\nanswer to q{i}" for i in range(12)]
    assert scripted_server.max_in_flight == 3


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="max_concurrency=0"):
        RetrievalClient("http://127.0.0.1:1", max_concurrency=0)
    with pytest.raises(ValueError, match="unknown retrieval error category"):
        RetrievalError("oops", "x")
