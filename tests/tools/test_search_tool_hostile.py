"""Hostile search calls against the real server, and servers that answer garbage or drop the connection:
SearchTool.execute never raises; every failure is an error observation with its kind in the metrics, counted on
the instance (never a passage made up from a null)."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_verl.retrieval.client import RetrievalClient, RetrievalError
from agentic_verl.tools.search import SEARCH_FAILURES, SearchTool

QUERY = st.one_of(
    st.text(st.characters(codec=None, categories=["L", "N", "P", "Zs", "Cc", "Cs", "So"]), max_size=30),
    st.sampled_from(["", "   ", "\x00", "ham\x00let", "\ud800", "\udfff hamlet", "x" * 20_000, "paris " * 800,
                     "<answer>Paris</answer>", "</tool_response><information>", "\u2028\x1b[2J", "\U0001F600"]),
)
WORDS = st.sampled_from(["paris", "who wrote hamlet", "capital of Japan", "Mozart Salzburg", "the of"])
PARAMETERS = st.one_of(
    st.fixed_dictionaries({"query_list": st.lists(WORDS, min_size=1, max_size=5)}),
    st.fixed_dictionaries({"query_list": st.lists(st.one_of(WORDS, QUERY), min_size=1, max_size=5)}),
    st.fixed_dictionaries({"query_list": st.lists(QUERY, max_size=8)}),
    st.fixed_dictionaries({"query_list": st.one_of(st.none(), QUERY, st.integers(), st.lists(st.integers(), max_size=2),
                                                   st.dictionaries(QUERY, QUERY, max_size=2))}),
    st.one_of(st.none(), QUERY, st.lists(QUERY, max_size=2), st.just({})),
)


async def _execute(tool: SearchTool, parameters) -> tuple[str, dict, int]:
    instance_id, _ = await tool.create()
    try:
        response, reward, metrics = await tool.execute(instance_id, parameters)
        assert reward == 0.0
        return response.text, metrics, tool._instances[instance_id]["errors"]
    finally:
        await tool.release(instance_id)
        await tool._client.aclose()


def test_hostile_calls_against_the_real_server_are_counted_observations(retrieval_server):
    seen: Counter = Counter()
    before = _by_status(retrieval_server.url)

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(parameters=PARAMETERS, topk=st.sampled_from([1, 3, 3, 3, 100, 101, 10**9]),
           max_query_chars=st.sampled_from([1000, 10**6]))
    def check(parameters, topk, max_query_chars):
        tool = SearchTool({"type": "native", "retrieval_url": retrieval_server.url, "topk": topk,
                           "max_query_chars": max_query_chars, "max_retries": 0})
        text, metrics, errors = asyncio.run(_execute(tool, parameters))
        text.encode("utf-8")  # the observation can be tokenized
        assert metrics["status"] in ("ok", "bad_arguments")  # the server is up: never timeout / server_error
        assert metrics["error_type"] == (None if metrics["status"] == "ok" else "bad_arguments")
        assert text.startswith("Search error (bad arguments): ") == (metrics["status"] != "ok") == (errors == 1)
        # our client never sends a body the server cannot parse (a lone surrogate used to come back as
        # "body is not valid JSON": the model was told nothing useful)
        assert "not valid JSON" not in text
        seen["server refused" if "rejected the request" in text else metrics["status"]] += 1

    check()
    assert seen["ok"] >= 10 and seen["server refused"] >= 5 and seen["bad_arguments"] >= 20, seen  # all paths ran
    after = _by_status(retrieval_server.url)
    for status in ("400", "500"):  # the server never failed, and never got a body it could not parse
        assert after.get(status, 0) == before.get(status, 0), (before, after)


def _by_status(url: str) -> dict:
    return httpx.get(url + "/metrics", timeout=30).json()["requests"]["by_status"]


async def test_a_lone_surrogate_is_bad_arguments_before_any_request(scripted_server):
    tool = SearchTool({"type": "native", "retrieval_url": scripted_server.url})
    text, metrics, errors = await _execute(tool, {"query_list": ["paris", "\ud800 hamlet"]})
    assert text.startswith("Search error (bad arguments): queries[1] is not valid Unicode (it has a lone surrogate)")
    assert (metrics["error_type"], errors, scripted_server.requests) == ("bad_arguments", 1, 0)


MALFORMED = [
    # (body the server answers 200 with, phrase in the observation)
    (b"<html>oops</html>", "JSONDecodeError"),  # not JSON
    (b'{"result": "x"}', "expected 1 result lists, got str"),  # wrong shape
    (b'{"result": []}', "expected 1 result lists, got list of length 0"),  # a list per query is missing
    (b'{"result": [[1]]}', "AttributeError"),  # an entry is not an object
    (b'{"result": [[{"document": {"id": "1"}}]]}', "KeyError"),  # no contents
    (b'{"result": [[{"document": {"id": "1", "contents": null}}]]}', "contents must be a string, got NoneType"),
    (b'{"result": [[{"document": {"contents": "x"}, "score": "high"}]]}', "could not convert string to float"),
    (b'\xff\xfe\x00garbage', "malformed answer"),  # not even UTF-8
]


@pytest.mark.parametrize(("body", "phrase"), MALFORMED, ids=[m[1] for m in MALFORMED])
async def test_a_malformed_answer_is_a_server_error_observation(app_server, body, phrase):
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    async def retrieve(request):
        return Response(body, media_type="application/json")

    SEARCH_FAILURES.clear()
    try:
        with app_server(Starlette(routes=[Route("/retrieve", retrieve, methods=["POST"])])) as url:
            tool = SearchTool({"type": "native", "retrieval_url": url})
            text, metrics, errors = await _execute(tool, {"query_list": ["paris"]})
    finally:
        SEARCH_FAILURES.clear()
    assert text.startswith("Search error (server error): ") and "sent a malformed answer" in text and phrase in text
    assert (metrics["error_type"], errors) == ("server_error", 1)


async def test_a_server_that_drops_the_connection_is_a_server_error(app_server):
    async def drop(scope, receive, send):  # reads the request, then closes without an answer
        await receive()

    client = RetrievalClient("", timeout_s=5, max_retries=1, backoff_s=0.01)
    with app_server(drop) as url:
        client.url = url + "/retrieve"
        with pytest.raises(RetrievalError) as caught:
            await client.retrieve(["paris"])
    await client.aclose()
    assert caught.value.category == "server_error" and "(after 2 attempts)" in str(caught.value)
