"""Loopback HTTP servers for the FCDR tests: a scripted judge (OpenAI chat API, verdicts chosen by markers in the
sample's query) and a pass-through proxy that can fail its first requests. Both count what they receive."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from json_endpoint import JsonHandler, LoopbackServer

# which prompt a request is, by a sentence of the packaged prompt file
PROMPT_MARKERS = {"is_call": "reference answer in the data set", "solvable": "fully handled by calling",
                  "reasoning": "Reasoning written for this request", "regenerate": "previous response was rejected"}


class _Server(LoopbackServer):
    def __init__(self, handler_cls):
        self.requests: list[dict] = []
        self.fail_next = 0  # answer this many POSTs with HTTP 503 first
        owner = self

        class Handler(handler_cls):
            server_owner = owner

        super().__init__(Handler)

    def posts(self) -> int:
        return sum(1 for r in self.requests if r["method"] == "POST")


class _Handler(JsonHandler):
    server_owner: _Server

    def _send(self, status: int, payload) -> None:
        self.send_json(payload, status)

    def _body(self) -> dict:
        return self.read_json() or {}


class _JudgeHandler(_Handler):
    def do_GET(self):
        self.server_owner.requests.append({"method": "GET", "path": self.path})
        self._send(200, {"object": "list", "data": [{"id": "judge", "object": "model"}]})

    def do_POST(self):
        body = self._body()
        owner = self.server_owner
        owner.requests.append({"method": "POST", "path": self.path, "body": body})
        if owner.fail_next > 0:
            owner.fail_next -= 1
            return self._send(503, {"error": "warming up"})
        if body.get("model") != "judge":
            return self._send(404, {"error": f"model {body.get('model')} not found"})
        text = body["messages"][-1]["content"]
        check = next(name for name, marker in PROMPT_MARKERS.items() if marker in text)
        self._send(200, {"choices": [{"message": {"role": "assistant", "content": scripted_reply(check, text)}}]})


def scripted_reply(check: str, prompt: str) -> str:
    """Markers in the query pick the verdicts: `[text]` (check 1 says plain text), `[unsolvable]`, `[bad-cot]`,
    `[garbled:<check>]` (an unreadable reply), `[regen-ok]` / `[regen-bad]` (the rewrite passes / fails the AST
    match); everything else passes."""
    if f"[garbled:{check}]" in prompt:
        return "I am not sure what you mean."
    if check == "is_call":
        return "It is prose.\nVERDICT: TEXT" if "[text]" in prompt else "A call.\nVERDICT: CALL"
    if check == "solvable":
        return "**Verdict:** no" if "[unsolvable]" in prompt else "The tools fit.\nVERDICT: YES"
    if check == "reasoning":
        return "VERDICT: NO" if "[bad-cot]" in prompt else "<think>VERDICT: NO</think>It follows.\nVERDICT: YES"
    if "[regen-bad]" in prompt:
        return "<think>Call add.</think>\n\n[add(a=5, b=5)]"
    return "<think>The user adds 1 and 2, so I call add.</think>\n\n[add(a=1, b=2)]"


class _ProxyHandler(_Handler):
    target: str

    def _forward(self, method: str, data: bytes | None):
        headers = {"Content-Type": "application/json"}
        if self.headers.get("Authorization"):  # the client's token goes through, as through any proxy
            headers["Authorization"] = self.headers["Authorization"]
        request = urllib.request.Request(self.server_owner.target + self.path, data=data, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                self._send(response.status, json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            self._send(exc.code, json.loads(exc.read() or b"{}"))

    def do_GET(self):
        self.server_owner.requests.append({"method": "GET", "path": self.path})
        self._forward("GET", None)

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner = self.server_owner
        owner.requests.append({"method": "POST", "path": self.path, "body": json.loads(data or b"{}")})
        if owner.fail_next > 0:
            owner.fail_next -= 1
            return self._send(503, {"error": "injected failure"})
        self._forward("POST", data)


def judge_server() -> _Server:
    """A scripted judge serving the model name "judge"."""
    return _Server(_JudgeHandler)


def proxy_server(target: str) -> _Server:
    """Forwards every request to `target` (a real OpenAI-compatible server) and counts them."""
    server = _Server(_ProxyHandler)
    server.target = target
    return server
