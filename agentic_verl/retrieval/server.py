"""The `/retrieve` HTTP server (FastAPI + uvicorn) over a `RetrievalService`.

Endpoints:
  POST /retrieve  {"queries": [...], "topk": 3, "return_scores": false}
                  -> {"result": [[{"document": {"id", "contents"}, "score": s}, ...] per query]}
                  (entries are just the documents when return_scores is false, as in Search-R1)
  GET  /health    {"status": "ok", "mode", "index": index_meta, "limits", ...}; 503 when the worker died
  GET  /metrics   request counts by status, latency histogram, cache hits/misses, batch sizes

With a token (`serve(..., token=...)`; the command reads AGENTIC_VERL_RETRIEVAL_TOKEN, see retrieval/auth.py),
every request needs `Authorization: Bearer <token>`: without it or with a wrong one the answer is a 401 and nothing
else, except that `GET /health` without an Authorization header answers only its status (for load balancers).

Bad input (malformed JSON, invalid UTF-8, wrong types, limits) gets a 4xx `{"error": "...", "status": n}`
that says what is wrong; an exception in a backend gets a 500 with the reason, and the server stays up.

`ServerProcess` starts `agentic-verl serve retrieval` in a subprocess on a free loopback port and waits for
/health (used by tests, evaluations and notebooks); `ThreadedServer` serves an app in a thread of this process
(tests and benchmarks).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError

from agentic_verl.net import free_port, start_server_process, stop_server_process
from agentic_verl.retrieval.auth import TOKEN_ENV, bearer_matches, check_bind
from agentic_verl.retrieval.service import RequestError, RetrievalService

logger = logging.getLogger(__name__)


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    queries: list[StrictStr]
    topk: StrictInt = 3
    return_scores: StrictBool = False


def parse_request(body: bytes) -> RetrieveRequest:
    """Decode and type-check a request body; RequestError (400 / 422) says what is wrong."""
    if not body.strip():
        raise RequestError(400, 'empty request body; expected JSON like {"queries": ["..."], "topk": 3}')
    try:
        return RetrieveRequest.model_validate_json(body)
    except ValidationError as exc:
        problems, status = [], 422
        for error in exc.errors(include_url=False)[:5]:
            if error["type"] == "json_invalid":
                status = 400
                problems.append(f"body is not valid JSON (or not UTF-8): {error['msg']}")
            elif error["type"] == "model_type":
                problems.append('body must be a JSON object like {"queries": ["..."], "topk": 3}')
            else:
                where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
                where = where.lstrip(".") or "body"
                problems.append(f"{where}: {error['msg']}")
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise RequestError(status, "; ".join(problems) + more) from None


async def answer_retrieve(service: RetrievalService, body: bytes) -> tuple[int, dict]:
    """(status, JSON payload) for a /retrieve body; never raises, records the request in the metrics."""
    started, status = time.perf_counter(), 200
    try:
        parsed = parse_request(body)
        results = await service.search(parsed.queries, parsed.topk)
        if parsed.return_scores:
            payload = [[{"document": {"id": p.id, "contents": p.contents}, "score": p.score} for p in passages]
                       for passages in results]
        else:
            payload = [[{"id": p.id, "contents": p.contents} for p in passages] for passages in results]
        return status, {"result": payload}
    except RequestError as exc:
        status = exc.status
        return status, {"error": str(exc), "status": status}
    except Exception as exc:  # a backend failure: answer 500 with the reason and keep serving
        status = 500
        logger.exception("retrieval failed")
        return status, {"error": f"retrieval failed: {type(exc).__name__}: {exc}", "status": 500}
    finally:
        service.metrics.observe_request(status, time.perf_counter() - started)


UNAUTHORIZED = {"error": f"unauthorized: send the server's token as 'Authorization: Bearer <token>' (agentic_verl "
                         f"clients send {TOKEN_ENV} when it is set)", "status": 401}


class RetrieveFastPath:
    """The ASGI app the server runs: the token check, then POST /retrieve is answered here, everything else by
    the FastAPI app.

    Why not a FastAPI route: profiled with py-spy (--gil) at concurrency 64 on 2 cores with bm25s, FastAPI's
    middleware, routing and dependency layers took ~25% of the server's GIL time, as much per request as the
    request's own parsing, validation and JSON; the engine call is shared by a whole batch of requests, that
    per-request cost is not. Same validation, answers, limits and metrics as before.
    """

    def __init__(self, app: FastAPI, service: RetrievalService, token: str | None = None):
        self.app, self.service, self._token = app, service, token

    def __getattr__(self, name):  # .state, .routes, ... of the FastAPI app
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and self._token is not None:
            authorization = next((value for name, value in scope["headers"] if name == b"authorization"), None)
            if not bearer_matches(authorization, self._token):
                return await self._refuse(scope, send, anonymous=authorization is None)
        if scope["type"] != "http" or scope["path"] != "/retrieve":
            return await self.app(scope, receive, send)
        headers = [(b"content-type", b"application/json")]
        if scope["method"] != "POST":
            status, payload = 405, {"error": f"method {scope['method']} not allowed; use POST", "status": 405}
            headers.append((b"allow", b"POST"))
        else:
            try:
                body = await self._read_body(scope, receive)
            except RequestError as exc:
                self.service.metrics.observe_request(exc.status, 0.0)
                status, payload = exc.status, {"error": str(exc), "status": exc.status}
            else:
                status, payload = await answer_retrieve(self.service, body)
        await _send_json(send, status, payload, headers)

    async def _refuse(self, scope, send, anonymous: bool) -> None:
        """401 and nothing else; `GET /health` without an Authorization header gets only the status."""
        if scope["type"] == "websocket":  # no websocket routes; close before anything else happens
            return await send({"type": "websocket.close", "code": 1008})
        challenge = [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="retrieval"')]
        if anonymous and scope["path"] == "/health" and scope["method"] == "GET":
            ok = self.service.healthy()
            return await _send_json(send, 200 if ok else 503, {"status": "ok" if ok else "unhealthy"}, challenge)
        self.service.metrics.observe_request(401, 0.0)
        await _send_json(send, 401, UNAUTHORIZED, challenge)

    async def _read_body(self, scope, receive) -> bytes:
        limit = self.service.limits.max_body_bytes
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                raise RequestError(413, f"request body is {int(value)} bytes; the limit is {limit}")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise RequestError(400, "client disconnected before sending the whole body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise RequestError(413, f"request body is over the limit of {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _send_json(send, status: int, payload: dict, headers: list) -> None:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def create_app(service: RetrievalService, token: str | None = None) -> RetrieveFastPath:
    """The ASGI app (FastAPI for /health and /metrics, see RetrieveFastPath for /retrieve and the token check);
    closing it (lifespan shutdown) closes the service. `service` may also be a `ReplicaPool` (retrieval/replicas.py).
    """
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        service.close()

    app = FastAPI(title="agentic_verl retrieval", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = service

    @app.get("/health")
    async def health():
        ok = service.healthy()
        return JSONResponse({"status": "ok" if ok else "unhealthy", **service.describe()},
                              status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics():
        return JSONResponse(service.metrics.snapshot())

    return RetrieveFastPath(app, service, token)


def serve(service: RetrievalService, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
          token: str | None = None) -> None:
    """Run the server until interrupted (SIGINT / SIGTERM), then close the service. With `token`, every request
    needs it (see the module docstring); a host other than loopback without one raises ValueError."""
    import uvicorn

    try:
        check_bind(host, token)
    except ValueError:
        service.close()
        raise
    config = uvicorn.Config(create_app(service, token), host=host, port=port, log_level=log_level,
                            access_log=False, timeout_graceful_shutdown=5)
    try:
        uvicorn.Server(config).run()
    finally:
        service.close()


class ThreadedServer:
    """An ASGI app (`create_app(...)`, or a stand-in) served by uvicorn in a daemon thread of this process on
    127.0.0.1:<free port>, for tests and benchmarks that need no subprocess; a context manager, or start()/stop().
    `options` go to uvicorn.Config (default log_level "warning", no access log)."""

    def __init__(self, app, **options):
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, **{"log_level": "warning", "access_log": False,
                                                                          **options})
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"uvicorn did not start serving on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ServerProcess:
    """`agentic-verl serve retrieval ARGS` in a subprocess on 127.0.0.1:<free port>; a context manager.

    >>> # with ServerProcess(["--index", "my_index"]) as server: RetrievalClient(server.url) ...

    `env` adds to (or overrides) this process's environment for the server, e.g. {TOKEN_ENV: token}.
    """

    def __init__(self, args: list[str], port: int | None = None, startup_timeout_s: float = 60.0,
                 log_path: str | Path | None = None, env: dict[str, str] | None = None):
        self.host, self.port = "127.0.0.1", port or free_port()
        self.url = f"http://{self.host}:{self.port}"
        self._args, self._timeout, self._log_path = list(args), startup_timeout_s, log_path
        self._env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process: subprocess.Popen | None = None

    def start(self) -> ServerProcess:
        command = [sys.executable, "-m", "agentic_verl.cli", "serve", "retrieval", *self._args,
                   "--host", self.host, "--port", str(self.port)]
        self.process = start_server_process(command, self.url, name="retrieval server", timeout_s=self._timeout,
                                            env=self._env, log_path=self._log_path, stdout=subprocess.DEVNULL)
        return self

    def stop(self) -> None:
        stop_server_process(self.process)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
