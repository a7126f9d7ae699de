"""The BFCL environment server: bfcl-eval's multi-turn API simulators and checker over HTTP, one session per
trajectory. Runs in `.venv-bfcl` (standard library + bfcl-eval): `agentic-verl serve bfcl-env` starts it there.

    GET    /health                   {"status": "ok", "sessions", "limits", "classes", "stats", ...}
    POST   /sessions                 {"initial_config": {...}, "involved_classes": [...], "long_context": false}
                                     -> {"session_id": "..."}
    POST   /sessions/<id>/execute    {"calls": [{"name": "cd", "arguments": {"folder": "docs"}}, ...]}
                                     -> {"outputs": ["...", ...]}  (one per call, as BFCL shows them to the model)
    GET    /sessions/<id>/state      -> {"state": {class name: {attribute: value}}}
    DELETE /sessions/<id>            -> {"closed": "<id>"}
    POST   /check                    {"entry": {...}, "model_calls": [turn][step][call]}
                                     -> {"valid", "error_type", "error_message", "per_turn", "per_turn_error_types",
                                         "details"}  (bfcl-eval's multi_turn_checker; see checker.py)

Bad input gets a 4xx `{"error": "...", "status": n}` (400 unreadable JSON, 404 unknown session or path, 405, 411
no Content-Length, 413 body over the limit, 422 wrong shapes or unknown classes, 429 session limit) and touches no
other session; an exception in the server itself is a 500 with the reason, and the server keeps serving.

Binds 127.0.0.1 by default. With a token in AGENTIC_VERL_BFCL_ENV_TOKEN (required for any other address, as for the
retrieval server: agentic_verl.retrieval.auth), every request needs `Authorization: Bearer <token>`, else a 401;
`GET /health` without an Authorization header answers only its status.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata

from agentic_verl.bfcl_env import checker
from agentic_verl.bfcl_env.protocol import (
    SERVER_NAME,
    TOKEN_ENV,
    Limits,
    RequestError,
    add_server_arguments,
    parse_calls,
    parse_classes,
    parse_json,
    parse_object,
    require,
)
from agentic_verl.bfcl_env.sessions import SessionStore, load_classes, public_methods
from agentic_verl.retrieval.auth import bearer_matches, check_bind, is_loopback, token_from_env

UNAUTHORIZED = {"error": f"unauthorized: send the server's token as 'Authorization: Bearer <token>' (agentic_verl "
                         f"clients send {TOKEN_ENV} when it is set)", "status": 401}


class BfclEnvServer(ThreadingHTTPServer):
    """A thread per connection (keep-alive connections keep theirs); the sessions live in `store`."""

    daemon_threads = True
    request_queue_size = 1024  # a rollout opens hundreds of connections at once; socketserver's default is 5

    def __init__(self, address: tuple[str, int], store: SessionStore, token: str | None = None,
                 log_requests: bool = False):
        self.store, self.token, self.log_requests = store, token, log_requests
        instances = {name: cls() for name, cls in store.classes.items()}  # unloaded: only their method names
        self.methods_of = {name: set(public_methods(instance)) for name, instance in instances.items()}
        self.version = metadata.version("bfcl-eval")
        super().__init__(address, Handler)

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that left before its answer: nothing to say
            super().handle_error(request, client_address)

    def describe(self) -> dict:
        return {"server": SERVER_NAME, "bfcl_eval": self.version, "classes": sorted(self.store.classes),
                "limits": self.store.limits.describe(), "sessions": len(self.store), "stats": dict(self.store.stats),
                "auth": self.token is not None}


class Handler(BaseHTTPRequestHandler):
    server: BfclEnvServer
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections
    timeout = 300  # an idle keep-alive connection is closed after this (aiohttp drops its own after 15 s)

    def do_GET(self):
        self._answer("GET")

    def do_POST(self):
        self._answer("POST")

    def do_DELETE(self):
        self._answer("DELETE")

    def do_PUT(self):
        self._answer("PUT")

    def do_PATCH(self):
        self._answer("PATCH")

    def send_error(self, code, message=None, explain=None):
        """http.server's own refusals (a malformed request line or header, an unsupported method) as JSON too."""
        self.close_connection = True
        self._send(code, {"error": message or self.responses.get(code, ("error",))[0], "status": code})

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        if self.server.log_requests:
            super().log_message(format, *args)

    def _answer(self, method: str) -> None:
        self._body_read = False
        token = self.server.token
        if token is not None:
            authorization = self.headers.get("Authorization")
            if not bearer_matches(authorization, token):
                self.close_connection = True  # the body (if any) is not read
                if authorization is None and method == "GET" and self.path == "/health":
                    return self._send(200, {"status": "ok"}, challenge=True)
                return self._send(401, UNAUTHORIZED, challenge=True)
        try:
            status, payload = self._route(method)
        except RequestError as exc:
            status, payload = exc.status, {"error": str(exc), "status": exc.status}
        except Exception as exc:  # a bug here or in bfcl-eval: say so, keep serving
            traceback.print_exc(file=sys.stderr)
            status, payload = 500, {"error": f"server error: {type(exc).__name__}: {exc}"[:2000], "status": 500}
        if not self._body_read and (self.headers.get("Content-Length", "0") != "0" or self.headers.get("Transfer-Encoding")):
            self.close_connection = True  # a body left unread (refused before it was judged) would be the next request
        self._send(status, payload)

    def _route(self, method: str) -> tuple[int, dict]:
        store = self.server.store
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        if parts == ["health"]:
            self._allow(method, "GET")
            return 200, {"status": "ok", **self.server.describe()}
        if parts == ["sessions"]:
            self._allow(method, "POST")
            body = parse_object(self._json_body())
            initial_config = body.get("initial_config", {})
            require(isinstance(initial_config, dict), "initial_config", "a JSON object")
            classes = parse_classes(body.get("involved_classes"))
            long_context = body.get("long_context", False)
            require(isinstance(long_context, bool), "long_context", "true or false")
            return 200, {"session_id": store.create(initial_config, classes, long_context)}
        if len(parts) == 2 and parts[0] == "sessions":
            self._allow(method, "DELETE")
            store.close(parts[1])
            return 200, {"closed": parts[1]}
        if len(parts) == 3 and parts[0] == "sessions" and parts[2] == "execute":
            self._allow(method, "POST")
            session = store.get(parts[1])  # an unknown session is a 404 before its body is judged
            body = parse_object(self._json_body())
            calls = parse_calls(body.get("calls"), max_calls=store.limits.max_calls)
            return 200, {"outputs": store.execute(session.id, calls)}
        if len(parts) == 3 and parts[0] == "sessions" and parts[2] == "state":
            self._allow(method, "GET")
            return 200, {"state": store.state(parts[1])}
        if parts == ["check"]:
            self._allow(method, "POST")
            body = parse_object(self._json_body())
            entry, model_strings, gt_strings = checker.parse_check_request(body, self.server.methods_of)
            return 200, checker.check(entry, model_strings, gt_strings)
        raise RequestError(404, f"no such endpoint: {method} {self.path[:200]}")

    def _allow(self, method: str, allowed: str) -> None:
        if method != allowed:
            raise RequestError(405, f"{method} {self.path[:200]} is not allowed; use {allowed}")

    def _json_body(self):
        limit = self.server.store.limits.max_body_bytes
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or length is None:
            self.close_connection = True
            raise RequestError(411, "send the body with a Content-Length header (no chunked encoding)")
        if not length.isdigit():
            self.close_connection = True
            raise RequestError(400, f"bad Content-Length {length[:40]!r}")
        if int(length) > limit:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            raise RequestError(413, f"request body is {int(length)} bytes; the limit is {limit} (--max-body-bytes)")
        body = self.rfile.read(int(length))
        self._body_read = True
        return parse_json(body)

    def _send(self, status: int, payload: dict, challenge: bool = False) -> None:
        # ASCII escapes: a simulator's output may hold a lone surrogate (a model's "\\ud800" argument echoed back),
        # which has no UTF-8 form; escaped, it reads back as the same string
        data = json.dumps(payload, separators=(",", ":")).encode("ascii")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if challenge:
            self.send_header("WWW-Authenticate", 'Bearer realm="bfcl-env"')
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


def _sweep(store: SessionStore, stop: threading.Event) -> None:
    interval = min(30.0, store.limits.idle_timeout_s / 4)
    while not stop.wait(interval):
        store.expire_idle()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agentic_verl.bfcl_env.server", description=__doc__.split("\n")[0])
    add_server_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    token = token_from_env(TOKEN_ENV)
    try:
        check_bind(args.host, token, env=TOKEN_ENV, server=SERVER_NAME)
        limits = Limits(max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout_s,
                        max_body_bytes=args.max_body_bytes, max_calls=args.max_calls)
        store = SessionStore(limits, load_classes())
    except (ValueError, ImportError) as exc:
        print(f"bfcl env server: {exc}", file=sys.stderr)
        return 2
    server = BfclEnvServer((args.host, args.port), store, token, args.log_requests)
    stop = threading.Event()
    threading.Thread(target=_sweep, args=(store, stop), name="session-sweeper", daemon=True).start()

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    where = "loopback only" if is_loopback(args.host) else "reachable from other machines"
    auth = "every request needs the token" if token else "no token"
    print(f"{SERVER_NAME} (bfcl-eval {server.version}) on http://{args.host}:{server.server_address[1]}  "
          f"({where}; {auth}; {len(store.classes)} classes)", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
