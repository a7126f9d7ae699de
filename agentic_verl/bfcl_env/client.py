"""The async client of the BFCL environment server (server.py): sessions of BFCL's simulators and its checker.

    client = BfclEnvClient("http://127.0.0.1:8090")
    sid = await client.create_session(initial_config=entry["initial_config"],
                                      involved_classes=entry["involved_classes"])
    outputs = await client.execute(sid, [{"name": "cd", "arguments": {"folder": "docs"}}])
    await client.close(sid)
    verdict = await client.check(entry=entry, model_calls=[[[{"name": "cd", "arguments": {"folder": "docs"}}]]])

Calls go as `protocol.wire_call`s, so that what bfcl-eval's executor makes of a call (a non-finite number: its
NameError output) is what the server answers; a step with more calls than one request may carry is sent in several
(the server's limits, from its /health), all executed in order as BFCL executes them.

Nothing is retried: an /execute that timed out may have run, and running it again would change the state twice.
Every failure (an HTTP error status, an unreachable server, a timeout, a malformed answer) raises `BfclEnvError`
with the server's message and `status` (None when there was no answer).

The token: when the server requires one (agentic_verl.retrieval.auth), it is read from the environment variable
`api_key_env` names (default AGENTIC_VERL_BFCL_ENV_TOKEN, sent when set); naming a variable that is not set is an
error here, not a 401 later.
"""

from __future__ import annotations

import asyncio
import json
import weakref

import aiohttp  # as the retrieval client (httpx's async pool slows down with many concurrent requests)

from agentic_verl.bfcl_env.protocol import TOKEN_ENV, Limits, call_batches, oversized_call_output, wire_call
from agentic_verl.retrieval.auth import auth_headers, token_from_env
from agentic_verl.retrieval.client import _close_detached


class BfclEnvError(RuntimeError):
    """A failed request to the BFCL environment server; `status` is the HTTP status (None: no answer), `timed_out`
    whether the client gave up waiting."""

    def __init__(self, message: str, status: int | None = None, timed_out: bool = False):
        super().__init__(message)
        self.status, self.timed_out = status, timed_out


class BfclEnvClient:
    """Talks to one BFCL environment server; safe to share between coroutines and event loops (one aiohttp session
    per loop, created on first use)."""

    def __init__(self, url: str, *, api_key_env: str | None = None, timeout_s: float = 30.0,
                 max_concurrency: int = 256):
        if timeout_s <= 0 or max_concurrency < 1:
            raise ValueError(f"bad BfclEnvClient settings: timeout_s={timeout_s} (> 0), "
                             f"max_concurrency={max_concurrency} (>= 1)")
        self.url = url.rstrip("/")
        self.timeout_s, self.max_concurrency = timeout_s, max_concurrency
        self._token_env = api_key_env or TOKEN_ENV
        token = token_from_env(self._token_env)
        if api_key_env and token is None:
            raise BfclEnvError(f"api_key_env={api_key_env}: the environment variable {api_key_env} is not set")
        self._headers = auth_headers(token) if token else {}
        self._per_loop: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._server_limits: tuple[int, int] | None = None

    async def create_session(self, *, initial_config: dict, involved_classes: list[str],
                             long_context: bool = False) -> str:
        body = {"initial_config": initial_config, "involved_classes": list(involved_classes),
                "long_context": bool(long_context)}
        answer = await self._request("POST", "/sessions", body)
        return _field(answer, "session_id", str, self.url)

    async def execute(self, session_id: str, calls: list[dict]) -> list[str]:
        """One output string per call, as BFCL's multi-turn inference shows it to the model. Every call is executed,
        in order, as BFCL executes a step: calls go as `protocol.wire_call`s (a non-finite number is BFCL's
        NameError output), in as many requests as the server's limits need (`protocol.call_batches`); a single call
        larger than the server's body limit is not sent and gets an error output that says so."""
        wired = [wire_call(call) for call in calls]
        max_calls, max_body_bytes = await self._limits()
        outputs: list[str | None] = [None] * len(calls)
        for batch in call_batches(wired, max_calls, max_body_bytes):
            if len(batch) == 1 and len(json.dumps({"calls": [wired[batch[0]]]})) > max_body_bytes:
                outputs[batch[0]] = oversized_call_output(len(json.dumps(wired[batch[0]])), max_body_bytes)
                continue
            answer = await self._request("POST", f"/sessions/{session_id}/execute",
                                         {"calls": [wired[i] for i in batch]})
            answered = _field(answer, "outputs", list, self.url)
            if len(answered) != len(batch) or not all(isinstance(o, str) for o in answered):
                raise BfclEnvError(f"{self.url} answered {len(answered)} outputs for {len(batch)} calls")
            for index, output in zip(batch, answered, strict=True):
                outputs[index] = output
        return outputs

    async def _limits(self) -> tuple[int, int]:
        """(calls per /execute, body bytes) the server takes, from its /health (asked once; a server that does not
        say, e.g. one that answers /health without a token only its status, gets the defaults)."""
        if self._server_limits is None:
            limits = (await self.health()).get("limits")
            default = Limits()
            if not isinstance(limits, dict):
                limits = {}
            max_calls, max_body = limits.get("max_calls", default.max_calls), limits.get("max_body_bytes",
                                                                                        default.max_body_bytes)
            if not (isinstance(max_calls, int) and isinstance(max_body, int) and max_calls >= 1 and max_body >= 1024):
                raise BfclEnvError(f"{self.url}/health answered limits {limits!r}")
            self._server_limits = (max_calls, max_body)
        return self._server_limits

    async def state(self, session_id: str) -> dict:
        """{class name: {attribute: value}}: the session's simulators' public attributes."""
        return _field(await self._request("GET", f"/sessions/{session_id}/state"), "state", dict, self.url)

    async def close(self, session_id: str) -> None:
        await self._request("DELETE", f"/sessions/{session_id}")

    async def check(self, *, entry: dict, model_calls: list[list[list[dict]]]) -> dict:
        """bfcl-eval's multi-turn checker on a trajectory: `{"valid", "error_type", "error_message", "per_turn",
        "per_turn_error_types", "details"}`. `model_calls[turn][step]` is the list of calls made at that step."""
        keep = ("id", "initial_config", "involved_classes", "ground_truth", "long_context")
        wired = [[[wire_call(call) for call in step] for step in turn] for turn in model_calls]
        answer = await self._request("POST", "/check", {"entry": {k: entry[k] for k in keep if k in entry},
                                                        "model_calls": wired})
        _field(answer, "valid", bool, self.url)
        return answer

    async def health(self) -> dict:
        return await self._request("GET", "/health")

    async def aclose(self) -> None:
        """Close the HTTP session of the current event loop (others close with their loop)."""
        session = self._per_loop.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._per_loop.get(loop)
        if session is None or session.closed:
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_concurrency),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s), trust_env=False, headers=self._headers)
            self._per_loop[loop] = session
            weakref.finalize(loop, _close_detached, session)  # verl's loops end without telling us
        return session

    async def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        url = self.url + path
        try:
            async with self._session().request(method, url, json=body) as response:
                status, raw = response.status, await response.read()
        except asyncio.TimeoutError:
            raise BfclEnvError(f"no answer from {method} {url} within {self.timeout_s}s", timed_out=True) from None
        except aiohttp.ClientError as exc:
            raise BfclEnvError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from None
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if status >= 400:
            detail = answer.get("error") if isinstance(answer, dict) else raw[:300].decode("utf-8", "replace")
            hint = ""
            if status == 401:
                hint = (f"; the token in {self._token_env} is not the server's" if self._headers else
                        f"; the server requires a token: set {self._token_env} to the server's")
            raise BfclEnvError(f"{method} {url} answered {status}: {detail}{hint}", status)
        if not isinstance(answer, dict):
            raise BfclEnvError(f"{method} {url} answered something other than a JSON object: {raw[:300]!r}", status)
        return answer


def _field(answer: dict, key: str, kind: type, url: str):
    value = answer.get(key)
    if not isinstance(value, kind):
        raise BfclEnvError(f"{url} answered without a {kind.__name__} {key!r}: {str(answer)[:300]}")
    return value
