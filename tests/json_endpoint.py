"""A loopback OpenAI-compatible stub for tests: subclass `JsonHandler`, name the served models, answer POSTs with
`send_json`; `serving(Handler)` runs it on 127.0.0.1 for a `with` block and yields its URL. `LoopbackServer` is the
same as a class (`.url` known before the block), for stubs that keep state of their own."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """GET (/v1/models) lists `served_models`; subclasses define do_POST."""

    served_models: tuple[str, ...] = ("model",)

    def log_message(self, *args):  # keep the test output quiet
        pass

    def read_json(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")

    def send_json(self, payload, status: int = 200) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - http.server's naming
        self.send_json({"object": "list", "data": [{"id": name, "object": "model"} for name in self.served_models]})


class LoopbackServer:
    """`handler` on a free loopback port, threaded, while in a `with` block; `.url` is its base URL."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` on a free loopback port, threaded, for the block; yields the base URL."""
    with LoopbackServer(handler) as server:
        yield server.url
