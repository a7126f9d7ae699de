"""The shared token (retrieval/auth.py): a real `serve retrieval` on loopback with AGENTIC_VERL_RETRIEVAL_TOKEN set,
our callers (client, health probe, search tool) sending it, and the refusal to bind beyond loopback without it."""

from __future__ import annotations

import httpx
import pytest

from agentic_verl.cli import main
from agentic_verl.retrieval.auth import TOKEN_ENV, bearer_matches, check_bind, is_loopback
from agentic_verl.retrieval.backends.bm25s_backend import SCORER_ENV
from agentic_verl.retrieval.client import RetrievalClient, RetrievalError, health_problem
from agentic_verl.retrieval.server import UNAUTHORIZED, ServerProcess, serve

TOKEN = "test-token-0123456789abcdef"
CORPUS_WORDS = ("Hamlet", "Shakespeare", "bm25s", "index")  # nothing of the index may leak into a 401


@pytest.fixture(scope="module")
def token_server(tiny_index_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("token_server") / "server.log"
    with ServerProcess(
        ["--index", str(tiny_index_dir)],
        log_path=log,
        startup_timeout_s=240,
        env={TOKEN_ENV: TOKEN, SCORER_ENV: "numpy"},
    ) as server:  # no numba compile: not about scoring
        yield server


def request(server, method: str, path: str, authorization: str | None) -> httpx.Response:
    headers = {"authorization": authorization} if authorization is not None else {}
    body = {"queries": ["who wrote hamlet"], "topk": 2} if method == "POST" else None
    return httpx.request(method, server.url + path, json=body, headers=headers, timeout=30, trust_env=False)


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),  # all of 127/8 is loopback
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),  # as written in URLs
        ("0.0.0.0", False),  # every interface
        ("::", False),
        ("10.1.2.3", False),
        ("my-node.cluster", False),  # a hostname may resolve anywhere
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    "header, matches",
    [
        (f"Bearer {TOKEN}".encode(), True),
        (f"bearer {TOKEN}".encode(), True),  # the scheme is case-insensitive
        (f"Bearer {TOKEN}", True),  # str as well as ASGI's bytes
        (f"Bearer {TOKEN[:-1]}".encode(), False),  # a prefix of the token
        (f"Bearer {TOKEN}x".encode(), False),  # the token and more
        (f"Basic {TOKEN}".encode(), False),  # another scheme
        (TOKEN.encode(), False),  # no scheme
        (b"", False),
        (None, False),
    ],
)
def test_bearer_matches(header, matches):
    assert bearer_matches(header, TOKEN) is matches


def test_check_bind():
    check_bind("127.0.0.1", None)  # loopback needs no token
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(ValueError, match=rf"refusing to bind 0.0.0.0 without a token.*{TOKEN_ENV}"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ValueError, match=rf"{TOKEN_ENV} must be at least 16 printable ASCII"):
        check_bind("127.0.0.1", "short")  # a token, once set, must be a real one on loopback too
    with pytest.raises(ValueError, match="without spaces"):
        check_bind("0.0.0.0", "a token with spaces in it")


def test_cli_refuses_a_non_loopback_host_without_the_token(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    # the index does not exist: the refusal comes before anything is loaded or bound
    assert main(["serve", "retrieval", "--index", str(tmp_path / "none"), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert (
        f"refusing to bind 0.0.0.0 without a token: a retrieval server reachable from other machines requires "
        f"the shared token in {TOKEN_ENV}" in err
    )


def test_serve_refuses_a_non_loopback_host_without_a_token(tiny_index_dir):
    from agentic_verl.retrieval.service import RetrievalService

    service = RetrievalService.from_index_dir(tiny_index_dir)
    with pytest.raises(ValueError, match="refusing to bind 0.0.0.0"):
        serve(service, host="0.0.0.0", port=1)
    assert not service.healthy()  # closed, not left running


@pytest.mark.parametrize(
    "method, path, authorization",
    [
        ("POST", "/retrieve", None),  # no token
        ("POST", "/retrieve", "Bearer wrong-token-0123456789abcdef"),  # a wrong one
        ("POST", "/retrieve", f"Basic {TOKEN}"),  # the right secret in another scheme
        ("POST", "/retrieve", "Bearer"),  # the scheme without a token
        ("GET", "/metrics", None),
        ("GET", "/health", "Bearer wrong-token-0123456789abcdef"),  # /health is exempt only without a header
        ("GET", "/openapi.json", None),  # FastAPI's own routes too
        ("GET", "/no-such-path", None),  # even a 404 needs the token
    ],
)
def test_without_the_right_token_every_endpoint_answers_401_and_nothing_else(token_server, method, path, authorization):
    response = request(token_server, method, path, authorization)
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert not any(word in response.text for word in CORPUS_WORDS)


def test_health_without_a_header_says_only_the_status(token_server):
    response = request(token_server, "GET", "/health", None)
    assert response.status_code == 200 and response.json() == {"status": "ok"}  # for a load balancer's check
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_the_token_opens_every_endpoint(token_server, tiny_index_dir):
    bearer = f"Bearer {TOKEN}"
    result = request(token_server, "POST", "/retrieve", bearer).json()["result"]
    assert result[0][0]["id"] == "hamlet"
    health = request(token_server, "GET", "/health", bearer).json()
    assert health["status"] == "ok" and health["index"]["backend"] == "bm25s"
    metrics = request(token_server, "GET", "/metrics", bearer).json()
    assert metrics["requests"]["by_status"]["200"] >= 1
    assert metrics["requests"]["by_status"]["401"] >= 1  # refused requests are counted


async def test_client_and_health_probe_send_the_token_from_the_environment(token_server, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, f"  {TOKEN}\n")  # as `export VAR=$(cat file)` may leave it
    assert health_problem(token_server.url) is None
    client = RetrievalClient(token_server.url)
    try:
        [passages] = await client.retrieve(["capital of france"], topk=1)
    finally:
        await client.aclose()
    assert passages[0].id == "paris"


def refused_count(server) -> int:
    metrics = request(server, "GET", "/metrics", f"Bearer {TOKEN}").json()
    return metrics["requests"]["by_status"].get("401", 0)


@pytest.mark.parametrize(
    "token, hint",
    [
        (None, f"the server requires a token: set {TOKEN_ENV} to the server's"),
        ("wrong-token-0123456789abcdef", f"the token in {TOKEN_ENV} is not the server's"),
    ],
)
async def test_a_missing_or_wrong_token_is_a_clear_unretried_server_error(token_server, monkeypatch, token, hint):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    if token:
        monkeypatch.setenv(TOKEN_ENV, token)
    problem = health_problem(token_server.url)
    assert problem is not None and problem.endswith(hint)
    before = refused_count(token_server)
    client = RetrievalClient(token_server.url, max_retries=2, backoff_s=0.01)
    try:
        with pytest.raises(RetrievalError) as caught:
            await client.retrieve(["who wrote hamlet"])
    finally:
        await client.aclose()
    # server_error: the setup is wrong, not the policy's arguments (rag_r1 counts it towards its fail-fast)
    assert caught.value.category == "server_error"
    assert "refused the request (401)" in str(caught.value) and str(caught.value).endswith(hint)
    assert refused_count(token_server) == before + 1  # a 401 is not retried


async def test_a_client_with_a_token_still_talks_to_a_server_without_one(retrieval_server, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert health_problem(retrieval_server.url) is None
    client = RetrievalClient(retrieval_server.url)
    try:
        assert (await client.retrieve(["Everest Himalayas"], topk=1))[0][0].id == "everest"
    finally:
        await client.aclose()


async def test_search_tool_sends_the_token(token_server, monkeypatch):
    from agentic_verl.tools.search import SearchTool  # imports verl: only this test pays for it

    async def search(tool):
        instance_id, _ = await tool.create()
        try:
            return await tool.execute(instance_id, {"query_list": ["who wrote hamlet"]})
        finally:
            await tool.release(instance_id)

    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    response, _, metrics = await search(SearchTool({"type": "native", "retrieval_url": token_server.url}))
    assert metrics["status"] == "ok" and response.text.startswith("Doc 1 (Title: Hamlet)")
    monkeypatch.delenv(TOKEN_ENV)
    response, _, metrics = await search(SearchTool({"type": "native", "retrieval_url": token_server.url}))
    assert metrics["status"] == "server_error" and TOKEN_ENV in response.text
    assert "Hamlet" not in response.text


def test_docstring_examples():
    import doctest

    from agentic_verl.retrieval import auth

    result = doctest.testmod(auth)
    assert result.attempted > 0 and result.failed == 0
