"""Servers of their own: idle sessions expire, the session/call/body limits answer 4xx, and off loopback the token
is required on every request (as for the retrieval server)."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest
from _bfcl_env_testlib import load_entries, post, raw, requires_venv

from agentic_verl.bfcl_env.client import BfclEnvClient, BfclEnvError
from agentic_verl.bfcl_env.process import BfclEnvProcess
from agentic_verl.bfcl_env.protocol import TOKEN_ENV
from agentic_verl.bfcl_env.venv import PACKAGE_DIR, venv_python
from agentic_verl.cli import main

pytestmark = requires_venv

TOKEN = "bfcl-env-test-token-0123456789"
ENTRY = load_entries("base", 1)[0]
CREATE = {"initial_config": ENTRY["initial_config"], "involved_classes": ENTRY["involved_classes"]}


async def test_an_idle_session_expires_and_a_used_one_does_not(tmp_path):
    with BfclEnvProcess(["--idle-timeout-s", "1"], log_path=tmp_path / "log") as server:
        client = BfclEnvClient(server.url)
        idle = await client.create_session(**CREATE)
        used = await client.create_session(**CREATE)
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            await client.execute(used, [{"name": "pwd", "arguments": {}}])
            await asyncio.sleep(0.2)
        with pytest.raises(BfclEnvError, match=r"closed after 1 s idle \(--idle-timeout-s\)") as caught:
            await client.state(idle)
        assert caught.value.status == 404
        assert "GorillaFileSystem" in await client.state(used)
        health = await client.health()
        assert health["stats"]["expired"] == 1 and health["sessions"] == 1
        await client.aclose()


def test_session_call_and_body_limits_answer_4xx(tmp_path):
    args = ["--max-sessions", "2", "--max-calls", "2", "--max-body-bytes", "4096"]
    with BfclEnvProcess(args, log_path=tmp_path / "log") as server:
        small = {"initial_config": {}, "involved_classes": ["MathAPI"]}
        first, second = (post(server.url, "/sessions", small)[1]["session_id"] for _ in range(2))
        status, answer = post(server.url, "/sessions", small)
        assert status == 429 and "--max-sessions 2" in answer["error"]
        assert raw(server.url, "DELETE", f"/sessions/{first}")[0] == 200
        assert post(server.url, "/sessions", small)[0] == 200  # room again
        three = [{"name": "add", "arguments": {"a": 1, "b": 2}}] * 3
        status, answer = post(server.url, f"/sessions/{second}/execute", {"calls": three})
        assert status == 422 and "limit is 2" in answer["error"]
        status, answer = post(server.url, "/sessions", {**small, "padding": "x" * 4096})
        assert status == 413 and "--max-body-bytes" in answer["error"]
        status, answer = post(server.url, f"/sessions/{second}/execute", {"calls": three[:2]})
        assert (status, answer) == (200, {"outputs": ['{"result": 3}', '{"result": 3}']})


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):
    """Bound to every address (off loopback), so the token is required."""
    log = tmp_path_factory.mktemp("bfcl_env_token") / "log"
    with BfclEnvProcess(host="0.0.0.0", log_path=log, env={TOKEN_ENV: TOKEN}) as server:
        yield server


@pytest.mark.parametrize("method, path, authorization", [
    ("POST", "/sessions", None),
    ("POST", "/sessions", "Bearer wrong-token-0123456789abcdef"),
    ("POST", "/sessions", f"Basic {TOKEN}"),
    ("POST", "/check", None),
    ("GET", "/sessions/x/state", None),
    ("DELETE", "/sessions/x", None),
    ("GET", "/health", "Bearer wrong-token-0123456789abcdef"),  # /health is exempt only without a header
    ("GET", "/no-such-path", None),
])
def test_off_loopback_every_request_needs_the_token(token_server, method, path, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    body = b'{"involved_classes": ["MathAPI"]}' if method == "POST" else None
    status, answer, answer_headers = raw(token_server.url, method, path, body, headers)
    assert status == 401 and "unauthorized" in answer["error"] and TOKEN_ENV in answer["error"]
    assert answer_headers["www-authenticate"].startswith("Bearer")


async def test_with_the_token_the_client_works_and_health_without_one_says_only_ok(token_server, monkeypatch):
    assert raw(token_server.url, "GET", "/health")[:2] == (200, {"status": "ok"})
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    client = BfclEnvClient(token_server.url)
    assert (await client.health())["auth"] is True
    sid = await client.create_session(**CREATE)
    assert await client.execute(sid, [{"name": "pwd", "arguments": {}}]) == ['{"current_working_directory": "/workspace"}']
    await client.close(sid)
    await client.aclose()
    monkeypatch.setenv("OTHER_TOKEN_VAR", TOKEN)
    named = BfclEnvClient(token_server.url, api_key_env="OTHER_TOKEN_VAR")
    assert (await named.health())["auth"] is True
    await named.aclose()
    monkeypatch.delenv(TOKEN_ENV)
    anonymous = BfclEnvClient(token_server.url)
    with pytest.raises(BfclEnvError, match=f"the server requires a token: set {TOKEN_ENV}") as caught:
        await anonymous.create_session(**CREATE)
    assert caught.value.status == 401
    await anonymous.aclose()
    with pytest.raises(BfclEnvError, match="UNSET_TOKEN_VAR is not set"):
        BfclEnvClient(token_server.url, api_key_env="UNSET_TOKEN_VAR")


def test_an_address_off_loopback_without_a_token_is_refused(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert main(["serve", "bfcl-env", "--host", "0.0.0.0"]) == 2  # the command, before starting anything
    assert f"requires the shared token in {TOKEN_ENV}" in capsys.readouterr().err
    # the server itself, started without the command
    done = subprocess.run([str(venv_python()), "-m", "agentic_verl.bfcl_env.server", "--host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PYTHONPATH": str(PACKAGE_DIR.parent), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "refusing to bind 0.0.0.0 without a token" in done.stderr
