"""The async client of the BFCL environment server (server.py): sessions of BFCL's simulators and its checker.

    client = BfclEnvClient("http://127.0.0.1:8090")
    sid = await client.create_session(initial_config=entry["initial_config"],
                                      involved_classes=entry["involved_classes"])
    outputs = await client.execute(sid, [{"name": "cd", "arguments": {"folder": "docs"}}])
    await client.close(sid)
    verdict = await client.check(entry=entry, model_calls=[[[{"name": "cd", "arguments": {"folder": "docs"}}]]])

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

from agentic_verl.bfcl_env.protocol import TOKEN_ENV
from agentic_verl.retrieval.auth import auth_headers, token_from_env
from agentic_verl.retrieval.client import _close_detached


class BfclEnvError(RuntimeError):
    """A failed request to the BFCL environment server; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


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

    async def create_session(self, *, initial_config: dict, involved_classes: list[str],
                             long_context: bool = False) -> str:
        body = {"initial_config": initial_config, "involved_classes": list(involved_classes),
                "long_context": bool(long_context)}
        answer = await self._request("POST", "/sessions", body)
        return _field(answer, "session_id", str, self.url)

    async def execute(self, session_id: str, calls: list[dict]) -> list[str]:
        """One output string per call, as BFCL's multi-turn inference shows it to the model."""
        answer = await self._request("POST", f"/sessions/{session_id}/execute", {"calls": calls})
        outputs = _field(answer, "outputs", list, self.url)
        if len(outputs) != len(calls) or not all(isinstance(o, str) for o in outputs):
            raise BfclEnvError(f"{self.url} answered {len(outputs)} outputs for {len(calls)} calls")
        return outputs

    async def state(self, session_id: str) -> dict:
        """{class name: {attribute: value}}: the session's simulators' public attributes."""
        return _field(await self._request("GET", f"/sessions/{session_id}/state"), "state", dict, self.url)

    async def close(self, session_id: str) -> None:
        await self._request("DELETE", f"/sessions/{session_id}")

    async def check(self, *, entry: dict, model_calls: list[list[list[dict]]]) -> dict:
        """bfcl-eval's multi-turn checker on a trajectory: `{"valid", "error_type", "error_message", "per_turn",
        "per_turn_error_types", "details"}`. `model_calls[turn][step]` is the list of calls made at that step."""
        keep = ("id", "initial_config", "involved_classes", "ground_truth", "long_context")
        answer = await self._request("POST", "/check", {"entry": {k: entry[k] for k in keep if k in entry},
                                                        "model_calls": model_calls})
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
            raise BfclEnvError(f"no answer from {method} {url} within {self.timeout_s}s") from None
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
