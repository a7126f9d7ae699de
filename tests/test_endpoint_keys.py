"""Which endpoint gets which key: the default OPENAI_API_KEY only over https or to loopback (never in clear text to
another host), a variable named with --api-key-env wherever the user points it, and the key never in a log."""

from __future__ import annotations

import asyncio
import logging

import pytest
from test_net import StubServer

from agentic_verl.net import auth_headers, default_key_allowed


@pytest.mark.parametrize("url,allowed", [
    ("https://api.openai.com/v1", True),  # TLS: the key is not in clear text
    ("HTTPS://gpu-node:8443", True),
    ("http://127.0.0.1:8001", True),  # loopback: stays on this machine
    ("http://127.9.9.9:8001/v1", True),
    ("http://[::1]:8001", True),
    ("http://localhost:8001", True),
    ("http://LOCALHOST.:8001", True),
    ("http://10.0.0.7:8001", False),  # plain http to another host
    ("http://gpu-node:8001", False),
    ("http://0.0.0.0:8001", False),
    ("http://127.0.0.1.example.com:8001", False),  # a name that only looks like loopback
    ("http://localhost.example.com:8001", False),
    ("http://user@10.0.0.7:8001", False),
    ("ftp://127.0.0.1", False),
    ("127.0.0.1:8001", False),  # no scheme: not an endpoint URL
])
def test_where_the_default_key_may_go(url, allowed):
    assert default_key_allowed(url) is allowed


def test_the_default_key_is_held_back_from_plain_http_and_never_logged(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-secret")
    monkeypatch.setenv("AGENTIC_VERL_TEST_KEY", "sk-named-secret")
    with caplog.at_level(logging.WARNING, logger="agentic_verl.net"):
        assert auth_headers(url="http://10.0.0.7:8001") == {}
    assert "--api-key-env" in caplog.text and "http://10.0.0.7:8001" in caplog.text
    assert "sk-" not in caplog.text
    assert auth_headers(url="https://10.0.0.7:8443") == {"Authorization": "Bearer sk-default-secret"}
    # a variable the user names goes where the user points it
    assert auth_headers("AGENTIC_VERL_TEST_KEY", url="http://10.0.0.7:8001") == {
        "Authorization": "Bearer sk-named-secret"}


class _Tokenizer:
    eos_token_id = 0

    def encode(self, text, add_special_tokens=False):
        return [1] * len(text)


def test_a_loopback_endpoint_receives_the_default_key(monkeypatch):
    """The evals' engine (eval qa / bfcl / humaneval) and eval screenspot's predictor, on a loopback server that
    records each request's Authorization header."""
    from PIL import Image

    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine
    from agentic_verl.v2p.predictors import EndpointPredictor

    monkeypatch.setenv("OPENAI_API_KEY", "sk-default")

    async def engine_calls(url):
        engine = EndpointGenerationEngine(url, "m", _Tokenizer())
        try:
            await engine.check()
            await engine.generate([1, 2], {"max_tokens": 2})
        finally:
            await engine.aclose()

    with StubServer(models=("m",)) as server:
        asyncio.run(engine_calls(server.url))
        predictor = EndpointPredictor(server.url, "m")
        predictor.check()
        predictor.predict(Image.new("RGB", (28, 28)), "Click OK")
    assert [path for path, _ in server.authorizations] == ["/v1/models", "/v1/completions", "/v1/models",
                                                           "/v1/chat/completions"]
    assert {token for _, token in server.authorizations} == {"Bearer sk-default"}


def test_clients_for_a_remote_plain_http_endpoint_hold_the_default_key_back(monkeypatch):
    # built, not contacted: the header each client would send
    from agentic_verl.data.fcdr.judge import JudgeClient
    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine
    from agentic_verl.v2p.predictors import EndpointPredictor

    monkeypatch.setenv("OPENAI_API_KEY", "sk-default")
    monkeypatch.setenv("AGENTIC_VERL_TEST_KEY", "sk-named")
    remote = "http://10.0.0.7:8001"
    for client in (EndpointGenerationEngine(remote, "m", _Tokenizer()), EndpointPredictor(remote, "m"),
                   JudgeClient(remote, "m")):
        assert client._headers == {}, type(client).__name__
    for client in (EndpointGenerationEngine(remote, "m", _Tokenizer(), api_key_env="AGENTIC_VERL_TEST_KEY"),
                   EndpointPredictor(remote, "m", api_key_env="AGENTIC_VERL_TEST_KEY"),
                   JudgeClient(remote, "m", api_key_env="AGENTIC_VERL_TEST_KEY")):
        assert client._headers == {"Authorization": "Bearer sk-named"}, type(client).__name__
