"""The /retrieve server over HTTP (a real `agentic-verl serve retrieval` subprocess on loopback)."""

from __future__ import annotations

import json

import httpx
import pytest


def post(server, body, **kwargs) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(server.url + "/retrieve", content=content, timeout=30, trust_env=False,
                      headers={"content-type": "application/json"}, **kwargs)


def assert_healthy(server):
    response = httpx.get(server.url + "/health", timeout=10, trust_env=False)
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_retrieve_ranks_the_matching_passage_first_with_scores(retrieval_server):
    response = post(retrieval_server, {"queries": ["who wrote hamlet", "capital of japan"], "topk": 2,
                                       "return_scores": True})
    assert response.status_code == 200
    result = response.json()["result"]
    assert len(result) == 2
    assert result[0][0]["document"] == {"id": "hamlet", "contents": "Hamlet\nHamlet is a tragedy written by "
                                                                   "William Shakespeare around 1600."}
    assert result[1][0]["document"]["id"] == "tokyo"
    assert all(len(entries) <= 2 for entries in result)
    scores = [entry["score"] for entry in result[1]]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_without_return_scores_entries_are_documents(retrieval_server):
    # Search-R1's default: return_scores false -> each entry is the document itself
    result = post(retrieval_server, {"queries": ["Einstein relativity"], "topk": 1}).json()["result"]
    assert result == [[{"id": "einstein", "contents": "Albert Einstein\nAlbert Einstein developed the theory of "
                                                      "relativity."}]]


def test_stopword_only_and_unknown_queries_get_no_passages(retrieval_server):
    result = post(retrieval_server, {"queries": ["the of and", "xyzzyplugh"], "topk": 3}).json()["result"]
    assert result == [[], []]


def test_health_reports_the_index_meta(retrieval_server, tiny_index_dir):
    health = httpx.get(retrieval_server.url + "/health", trust_env=False).json()
    meta = json.loads((tiny_index_dir / "index_meta.json").read_text())
    assert health["mode"] == "index"
    assert health["index"] == meta
    assert health["index"]["backend"] == "bm25s" and health["index"]["passages"] == 12
    assert health["limits"]["max_queries"] == 1024


BAD_REQUESTS = [
    # (body, expected status, a phrase the error must contain)
    (b"{not json", 400, "not valid JSON"),  # malformed JSON
    (b"", 400, "empty request body"),  # no body at all
    (b'{"queries": ["caf\xff"]}', 400, "not valid JSON (or not UTF-8)"),  # invalid UTF-8
    (b"[1, 2]", 422, "must be a JSON object"),  # not an object
    ({"topk": 3}, 422, "queries: Field required"),  # missing field
    ({"queries": "hamlet"}, 422, "queries: Input should be a valid array"),  # a string, not a list
    ({"queries": ["ok", 5]}, 422, "queries[1]: Input should be a valid string"),  # wrong element type
    ({"queries": ["hamlet"], "topk": "3"}, 422, "topk: Input should be a valid integer"),  # topk as a string
    ({"queries": ["hamlet"], "topk": True}, 422, "topk: Input should be a valid integer"),  # topk as a bool
    ({"queries": ["hamlet"], "return_scores": "yes"}, 422, "return_scores"),  # wrong flag type
    ({"queries": []}, 422, "queries is empty"),  # empty list
    ({"queries": ["hamlet"], "topk": 0}, 422, "topk must be between 1 and 100, got 0"),  # zero
    ({"queries": ["hamlet"], "topk": -5}, 422, "topk must be between 1 and 100, got -5"),  # negative
    ({"queries": ["hamlet"], "topk": 10**12}, 422, "topk must be between 1 and 100"),  # huge
    ({"queries": ["hamlet", "  "]}, 422, "queries[1] is empty"),  # blank query
    ({"queries": ["x" * 1_000_000]}, 413, "queries[0] has 1000000 characters; the limit is 4096"),  # 1 MB query
    ({"queries": ["hamlet"] * 5000}, 413, "5000 queries in one request; the limit is 1024"),  # thousands
    (b'{"queries": ["' + b"y" * (9 << 20) + b'"]}', 413, "the limit is 8388608"),  # body over 8 MiB
]


@pytest.mark.parametrize(("body", "status", "phrase"), BAD_REQUESTS,
                         ids=[f"{i}-{case[1]}" for i, case in enumerate(BAD_REQUESTS)])
def test_bad_input_gets_a_4xx_json_error_and_the_server_stays_healthy(retrieval_server, body, status, phrase):
    response = post(retrieval_server, body)
    assert response.status_code == status, response.text
    error = response.json()
    assert phrase in error["error"], error
    assert error["status"] == status
    assert_healthy(retrieval_server)
    # and it still answers real queries
    assert post(retrieval_server, {"queries": ["Nile river Africa"], "topk": 1}).json()["result"][0][0]["id"] == "nile"


def test_unknown_path_and_wrong_method_are_4xx(retrieval_server):
    assert httpx.get(retrieval_server.url + "/retrieve", trust_env=False).status_code == 405
    assert httpx.post(retrieval_server.url + "/nope", trust_env=False).status_code == 404
    assert_healthy(retrieval_server)


def test_metrics_count_requests_statuses_cache_and_batches(retrieval_server):
    def metrics():
        return httpx.get(retrieval_server.url + "/metrics", trust_env=False).json()

    before = metrics()
    query = {"queries": ["Mozart composer Salzburg"], "topk": 2}
    assert post(retrieval_server, query).status_code == 200
    assert post(retrieval_server, query).status_code == 200  # same (query, topk): from the cache
    assert post(retrieval_server, {"queries": []}).status_code == 422
    after = metrics()
    by_status = lambda m, s: m["requests"]["by_status"].get(s, 0)  # noqa: E731
    assert by_status(after, "200") - by_status(before, "200") == 2
    assert by_status(after, "422") - by_status(before, "422") == 1
    assert after["cache_misses"] - before["cache_misses"] == 1
    assert after["cache_hits"] - before["cache_hits"] == 1
    assert after["backend_calls"] - before["backend_calls"] == 1
    assert sum(after["latency_ms"]["histogram"].values()) == after["requests"]["total"]
    assert sum(after["batches"]["queries_per_backend_call"].values()) == after["backend_calls"]
