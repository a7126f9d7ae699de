"""agentic_verl/net.py and its shell twin recipes/_common/net.sh, against real loopback sockets and tiny
http.servers: a free port is bindable, /health that answers late is waited for, one that never answers or a server
that dies is an error, and an endpoint that serves another model is refused with the names it does serve."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from json_endpoint import LoopbackServer

from agentic_verl.net import (
    EndpointError,
    auth_headers,
    check_model_or_endpoint,
    check_served_model,
    free_port,
    wait_for_health,
)

NET_SH = Path(__file__).resolve().parents[1] / "recipes" / "_common" / "net.sh"


class StubServer(LoopbackServer):
    """A loopback HTTP server: /health answers 200 once `healthy_after_s` has passed (503 before; never when None);
    /v1/models lists `models` (or answers `models_status` with a plain-text body); POST /v1/completions and
    /v1/chat/completions answer `completion_text` ("ok"). With `api_key`, every /v1 request needs
    `Authorization: Bearer <api_key>` (401 otherwise, as `vllm serve --api-key`); `authorizations` records each /v1 request's (path, Authorization)."""

    def __init__(self, healthy_after_s: float | None = 0.0, models=("served-model",), models_status: int = 200,
                 models_body: str | None = None, api_key: str | None = None, completion_text="ok"):
        started = self.started = time.monotonic()  # /health's clock starts here, before the test's
        outer = self
        self.health_calls = 0
        self.authorizations: list[tuple[str, str | None]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, body: str, kind: str = "application/json"):
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _refused(self) -> bool:
                """Record the request's token; answer 401 (and say so) when it is not the server's key."""
                given = self.headers.get("Authorization")
                outer.authorizations.append((self.path, given))
                if api_key is not None and given != f"Bearer {api_key}":
                    self._send(401, '{"error": "Unauthorized"}')
                    return True
                return False

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self._refused():
                    return
                if self.path == "/v1/completions":
                    self._send(200, json.dumps({"choices": [{"text": completion_text, "finish_reason": "stop"}]}))
                elif self.path == "/v1/chat/completions":
                    self._send(200, json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}))
                else:
                    self._send(404, "{}")

            def do_GET(self):
                if self.path.startswith("/v1") and self._refused():
                    return
                if self.path == "/health":
                    outer.health_calls += 1
                    ready = healthy_after_s is not None and time.monotonic() - started >= healthy_after_s
                    self._send(200 if ready else 503, '{"status": "ok"}' if ready else '{"status": "loading"}')
                elif self.path == "/v1/models":
                    body = models_body if models_body is not None else json.dumps(
                        {"object": "list", "data": [{"id": m, "object": "model"} for m in models]})
                    self._send(models_status, body, "application/json" if models_status == 200 else "text/plain")
                else:
                    self._send(404, "{}")

        super().__init__(Handler)


# ---- free_port ------------------------------------------------------------------------------------------------------

def test_free_port_is_bindable_and_nothing_listens_on_it():
    port = free_port()
    assert 1024 <= port <= 65535
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    with socket.socket() as sock:  # and a server can take it
        sock.bind(("127.0.0.1", port))


# ---- wait_for_health ------------------------------------------------------------------------------------------------

def test_wait_for_health_waits_for_a_late_200():
    with StubServer(healthy_after_s=0.5) as server:
        wait_for_health(server.url, timeout_s=10, interval_s=0.05)
        # measured from the server's own start: the test's clock starts later, so it may see a little under 0.5 s
        assert time.monotonic() - server.started >= 0.5 and server.health_calls >= 2  # 503s were polled past


def test_wait_for_health_times_out_on_a_server_that_never_gets_healthy():
    with StubServer(healthy_after_s=None) as server:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=rf"test server not healthy on {server.url} after 0.4s"):
            wait_for_health(server.url, timeout_s=0.4, name="test server", interval_s=0.05)
        assert 0.4 <= time.monotonic() - started < 5 and server.health_calls >= 2


def test_wait_for_health_times_out_on_a_silent_socket():
    """Accepts connections, never answers: each poll gives up after 1 s and the deadline still holds."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="not healthy"):
            wait_for_health(url, timeout_s=0.5)
        assert time.monotonic() - started < 5


def test_wait_for_health_fails_at_once_when_the_server_process_exits():
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="my server exited with 3"):
        wait_for_health(f"http://127.0.0.1:{free_port()}", timeout_s=30, process=process, name="my server")
    assert time.monotonic() - started < 5  # not the 30 s timeout


# ---- check_model_or_endpoint ----------------------------------------------------------------------------------------

def test_model_or_endpoint(tmp_path):
    check_model_or_endpoint(str(tmp_path), None, None)
    check_model_or_endpoint(None, "http://127.0.0.1:1", "m")
    with pytest.raises(ValueError, match="give exactly one of a model folder"):
        check_model_or_endpoint(None, None, None)
    with pytest.raises(ValueError, match="give exactly one of a model folder"):
        check_model_or_endpoint(str(tmp_path), "http://127.0.0.1:1", "m")
    with pytest.raises(ValueError, match="--endpoint needs --model-name"):
        check_model_or_endpoint(None, "http://127.0.0.1:1", "")
    (tmp_path / "weights.bin").write_bytes(b"")
    for not_a_folder in (tmp_path / "missing", tmp_path / "weights.bin"):
        with pytest.raises(FileNotFoundError, match=f"model folder not found: {not_a_folder}"):
            check_model_or_endpoint(str(not_a_folder), None, None)


# ---- check_served_model ---------------------------------------------------------------------------------------------

def test_served_model_is_listed():
    with StubServer(models=("a", "served-model")) as server:
        assert check_served_model(server.url, "served-model") == ["a", "served-model"]


def test_another_model_is_refused_with_what_is_served():
    with StubServer(models=("judge",)) as server:
        with pytest.raises(EndpointError, match=rf"^{server.url} does not serve 'gpt-4o'; it serves \['judge'\]$"):
            check_served_model(server.url, "gpt-4o")


def test_unreachable_endpoint():
    base = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EndpointError, match=rf"cannot reach the OpenAI-compatible endpoint {base}: "
                                            r"ConnectionRefusedError"):
        check_served_model(base, "m")


def test_http_error_and_a_body_that_is_no_model_list():
    with StubServer(models_status=503, models_body="warming up") as server:
        with pytest.raises(EndpointError, match=rf"{server.url}/v1/models answered HTTP 503: warming up"):
            check_served_model(server.url, "m")
    with StubServer(models_body="<html>not an API</html>") as server:
        with pytest.raises(EndpointError, match="answered something other than a model list: '<html>not an API"):
            check_served_model(server.url, "m")


def test_the_endpoint_engines_use_the_shared_check():
    """The evals' engine, the FCDR judge and V2P's predictor all refuse a wrong model name with the same message."""
    import asyncio

    from agentic_verl.data.fcdr.judge import JudgeClient
    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine
    from agentic_verl.v2p.predictors import EndpointPredictor

    async def both(url):
        engine, judge = EndpointGenerationEngine(url, "gpt-4o", tokenizer=None), JudgeClient(url, "gpt-4o")
        try:
            for client in (engine, judge):
                with pytest.raises(EndpointError, match=r"does not serve 'gpt-4o'; it serves \['judge'\]"):
                    await client.check()
            await JudgeClient(url, "judge").check()
        finally:
            await engine.aclose()
            await judge.aclose()

    with StubServer(models=("judge",)) as server:
        asyncio.run(both(server.url))
        with pytest.raises(EndpointError, match=r"does not serve 'gpt-4o'; it serves \['judge'\]"):
            EndpointPredictor(server.url, "gpt-4o").check()


# ---- endpoint auth ----------------------------------------------------------------------------------------------


def test_auth_headers_come_from_the_named_variable_or_openai_api_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENTIC_VERL_TEST_KEY", raising=False)
    local = "http://127.0.0.1:8001"
    assert auth_headers(url=local) == {}  # no default key: no header
    with pytest.raises(EndpointError, match="AGENTIC_VERL_TEST_KEY is not set") as error:
        auth_headers("AGENTIC_VERL_TEST_KEY", url=local)  # a variable named on purpose must be there
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default")
    assert auth_headers(url=local) == {"Authorization": "Bearer sk-default"}
    monkeypatch.setenv("AGENTIC_VERL_TEST_KEY", " sk-named\n")
    assert auth_headers("AGENTIC_VERL_TEST_KEY", url=local) == {"Authorization": "Bearer sk-named"}
    assert "sk-" not in str(error.value)


def test_a_keyed_server_refuses_the_check_without_the_key_and_passes_it_with_it():
    with StubServer(models=("m",), api_key="sk-right") as server:
        with pytest.raises(EndpointError, match="HTTP 401"):
            check_served_model(server.url, "m")
        with pytest.raises(EndpointError, match="HTTP 401"):
            check_served_model(server.url, "m", headers={"Authorization": "Bearer sk-wrong"})
        assert check_served_model(server.url, "m", headers={"Authorization": "Bearer sk-right"}) == ["m"]


def test_every_endpoint_client_sends_the_key_and_no_result_holds_it(monkeypatch):
    """The evals' engine, the FCDR judge and V2P's predictor each send the bearer token of --api-key-env on their
    check and their requests; the settings the evals write keep the variable's name, never the key."""
    import asyncio
    from dataclasses import asdict

    from PIL import Image

    from agentic_verl.data.fcdr.judge import JudgeClient
    from agentic_verl.eval.bfcl_eval import BFCLEvalSettings
    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine
    from agentic_verl.v2p.predictors import EndpointPredictor

    class Tokenizer:
        eos_token_id = 0

        def encode(self, text, add_special_tokens=False):
            return [1] * len(text)

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AGENTIC_VERL_TEST_KEY", "sk-secret")

    async def text_clients(url):
        engine = EndpointGenerationEngine(url, "m", Tokenizer(), api_key_env="AGENTIC_VERL_TEST_KEY")
        judge = JudgeClient(url, "m", api_key_env="AGENTIC_VERL_TEST_KEY")
        try:
            await engine.check()
            await engine.generate([1, 2, 3], {"max_tokens": 4})
            await judge.check()
            await judge.chat([{"role": "user", "content": "hi"}], max_tokens=4)
        finally:
            await engine.aclose()
            await judge.aclose()

    with StubServer(models=("m",), api_key="sk-secret") as server:
        asyncio.run(text_clients(server.url))
        predictor = EndpointPredictor(server.url, "m", api_key_env="AGENTIC_VERL_TEST_KEY")
        predictor.check()
        assert predictor.predict(Image.new("RGB", (56, 56)), "Click OK").failure != "request_error"
        paths = [path for path, _ in server.authorizations]
        assert paths.count("/v1/models") == 3 and "/v1/completions" in paths and "/v1/chat/completions" in paths
        assert {token for _, token in server.authorizations} == {"Bearer sk-secret"}
        with pytest.raises(EndpointError, match="HTTP 401"):  # the same server, no key
            EndpointPredictor(server.url, "m").check()
    settings = BFCLEvalSettings(endpoint="http://127.0.0.1:1", model_name="m", api_key_env="AGENTIC_VERL_TEST_KEY")
    assert "sk-secret" not in json.dumps(asdict(settings), default=str)


def test_every_endpoint_command_takes_api_key_env():
    from agentic_verl.cli import build_parser

    parser = build_parser()
    for argv in (["eval", "qa", "--endpoint", "http://h", "--data", "d", "--retrieval-url", "http://r"],
                 ["eval", "bfcl", "--endpoint", "http://h"],
                 ["eval", "humaneval", "--endpoint", "http://h"],
                 ["eval", "screenspot", "--endpoint", "http://h", "--data", "d"],
                 ["data", "refine-fc", "--endpoint", "http://h", "--input", "x", "--out", "o"]):
        args = parser.parse_args([*argv, "--model-name", "m", "--api-key-env", "MY_KEY"])
        assert args.api_key_env == "MY_KEY", argv


# ---- recipes/_common/net.sh -----------------------------------------------------------------------------------------

def _bash(script: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'set -euo pipefail; source "{NET_SH}"; {script}'], capture_output=True,
                          text=True, timeout=timeout)


def test_shell_free_port():
    out = _bash("free_port")
    assert out.returncode == 0, out.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", int(out.stdout)))


def test_shell_wait_for_health_late_then_ok(tmp_path):
    with StubServer(healthy_after_s=0.5) as server:
        out = _bash(f'sleep 60 & pid=$!; wait_for_health "{server.url}" 10 "$pid" /dev/null; kill "$pid"; echo up')
    assert out.returncode == 0 and out.stdout.strip() == "up", out.stderr


def test_shell_wait_for_health_times_out(tmp_path):
    with StubServer(healthy_after_s=None) as server:
        out = _bash(f'sleep 60 & pid=$!; wait_for_health "{server.url}" 1 "$pid" log.txt || rc=$?; kill "$pid"; '
                    'exit "${rc:-0}"')
    assert out.returncode == 1 and f"no /health on {server.url} after 1s (log: log.txt)" in out.stderr


def test_shell_wait_for_health_when_the_server_exits(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(30)) + "Address already in use\n")
    out = _bash(f'(exit 1) & pid=$!; wait "$pid" || true; '
                f'wait_for_health "http://127.0.0.1:{free_port()}" 30 "$pid" "{log}"')
    assert out.returncode == 1 and "exited before" in out.stderr and "Address already in use" in out.stderr
    assert "line 10\n" not in out.stderr  # only the log's last 20 lines


@pytest.mark.parametrize("text, expected", [
    ("ok\ud800!", "ok\ufffd\ufffd\ufffd!"),  # a lone surrogate (JSON "\\ud800") has no UTF-8 form: what bytes would give
    ("caf\u00e9", "caf\u00e9"),  # real text untouched
])
def test_endpoint_text_without_a_utf8_form_is_tokenised_as_bytes_would_be(text, expected):
    """A hostile or broken server's lone surrogates reach the tokenizer as U+FFFD, never as its TypeError."""
    import asyncio

    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine

    class StrictTokenizer:  # the fast tokenizers refuse lone surrogates with a TypeError
        eos_token_id = 0

        def encode(self, text, add_special_tokens=False):
            return list(text.encode("utf-8"))

    async def one(url):
        engine = EndpointGenerationEngine(url, "m", StrictTokenizer())
        try:
            return await engine.generate([1, 2], {"max_tokens": 4})
        finally:
            await engine.aclose()

    with StubServer(models=("m",), completion_text=text) as server:
        out = asyncio.run(one(server.url))
    assert out.token_ids == list(expected.encode("utf-8")) + [0]


def test_endpoint_text_that_is_not_text_is_the_servers_error():
    import asyncio

    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine

    async def one(url):
        engine = EndpointGenerationEngine(url, "m", tokenizer=None)
        try:
            await engine.generate([1], {"max_tokens": 4})
        finally:
            await engine.aclose()

    with StubServer(models=("m",), completion_text=["not", "text"]) as server:
        with pytest.raises(EndpointError, match="not text"):
            asyncio.run(one(server.url))
