"""A judge model behind any OpenAI-compatible chat endpoint, with an on-disk reply cache.

    judge = JudgeClient("http://127.0.0.1:8001", "Qwen2.5-72B-Instruct", cache_dir="outputs/fcdr/judge_cache")
    await judge.check()                      # EndpointError unless the server answers and serves that model
    text = await judge.chat([{"role": "user", "content": "..."}], max_tokens=256)
    await judge.aclose()

- **Cache**: one JSON file per request under `cache_dir/<2 hex>/<sha256>.json`, keyed by the model name and the
  request (messages + sampling parameters, as JSON with sorted keys), written atomically. A repeated request is
  answered from disk without reaching the server (and identical requests in flight at once share one answer);
  `cache_only=True` never reaches it (a miss is an error).
- **Concurrency**: at most `concurrency` requests in flight.
- **Retries**: connection errors, timeouts, HTTP 408/429/5xx are retried `max_retries` times, waiting
  `backoff_s * 2**attempt` between tries; other 4xx answers fail at once. `stats` counts requests sent (each try),
  retries and cache hits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import aiohttp

from agentic_verl.net import EndpointError, auth_headers, check_served_model

__all__ = ["EndpointError", "JudgeClient", "cache_key"]

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def cache_key(model: str, body: dict) -> str:
    """sha256 over the model name and the request body (sorted-key JSON)."""
    blob = json.dumps({"model": model, "request": body}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class JudgeClient:
    def __init__(self, url: str | None, model: str, *, cache_dir: str | os.PathLike | None = None,
                 concurrency: int = 8, max_retries: int = 3, backoff_s: float = 1.0, timeout_s: float = 600.0,
                 cache_only: bool = False, api_key_env: str | None = None):
        if not cache_only and not str(url or "").startswith(("http://", "https://")):
            raise ValueError(f"endpoint must be an http(s) URL, got {url!r}")
        if concurrency < 1 or max_retries < 0 or backoff_s < 0:
            raise ValueError("concurrency must be >= 1, max_retries and backoff_s >= 0")
        if cache_only and cache_dir is None:
            raise ValueError("cache_only needs a cache_dir")
        self.base = str(url or "").rstrip("/").removesuffix("/v1")
        self.model, self.cache_only = model, cache_only
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        # the bearer token (agentic_verl.net.auth_headers); requests' cache keys never include it
        self._headers = {} if cache_only else auth_headers(api_key_env, url=self.base)
        self._concurrency = concurrency
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._sessions: dict[int, aiohttp.ClientSession] = {}
        self._in_flight: dict[str, asyncio.Future] = {}  # identical requests in flight share one answer
        self.stats: Counter = Counter()  # requests (tries sent), retries, cache_hits, cache_writes

    # ---- the server ---------------------------------------------------------------------------------------------

    async def check(self) -> list[str]:
        """The served model names; EndpointError when the server does not answer or does not serve `model`.
        Skipped (returns []) with `cache_only`."""
        if self.cache_only:
            return []
        return await asyncio.to_thread(check_served_model, self.base, self.model, self._timeout.total, self._headers)

    async def chat(self, messages: list[dict], *, max_tokens: int, temperature: float = 0.0,
                   seed: int | None = None) -> str:
        """The reply text of one chat completion, from the cache when this exact request was answered before."""
        body = {"messages": messages, "max_tokens": int(max_tokens), "temperature": float(temperature)}
        if seed is not None:
            body["seed"] = int(seed)
        key = cache_key(self.model, body)
        cached = self._read_cache(key)
        if cached is not None:
            self.stats["cache_hits"] += 1
            return cached
        if self.cache_only:
            raise EndpointError(f"cache_only: no cached reply for request {key[:12]} in {self.cache_dir}")
        if key in self._in_flight:  # the same request from another sample: wait for its answer
            self.stats["cache_hits"] += 1
            return await asyncio.shield(self._in_flight[key])
        future = self._in_flight[key] = asyncio.get_running_loop().create_future()
        try:
            text = await self._ask(body)
            self._write_cache(key, body, text)
            future.set_result(text)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        finally:
            del self._in_flight[key]
        return text

    async def _ask(self, body: dict) -> str:
        async with self._semaphore():
            payload = await self._post({"model": self.model, **body})
        try:
            return payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"{self.base}/v1/chat/completions answered without a message: {payload}") from None

    async def _post(self, body: dict) -> dict:
        url = f"{self.base}/v1/chat/completions"
        for attempt in range(self.max_retries + 1):
            self.stats["requests"] += 1
            problem = None
            try:
                async with self._session().post(url, json=body) as response:
                    payload = await response.json(content_type=None)
                    if response.status == 200 and isinstance(payload, dict):
                        return payload
                    message = payload.get("error", payload) if isinstance(payload, dict) else payload
                    if response.status not in _RETRY_STATUS:
                        raise EndpointError(f"{url} rejected the request (HTTP {response.status}): {message}")
                    problem = f"HTTP {response.status}: {message}"
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, asyncio.TimeoutError,
                    json.JSONDecodeError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt == self.max_retries:
                raise EndpointError(f"{url}: no answer after {attempt + 1} tries ({problem})")
            self.stats["retries"] += 1
            await asyncio.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")

    def _session(self) -> aiohttp.ClientSession:
        loop = id(asyncio.get_running_loop())
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = self._sessions[loop] = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        return session

    def _semaphore(self) -> asyncio.Semaphore:
        loop = id(asyncio.get_running_loop())
        if loop not in self._semaphores:
            self._semaphores[loop] = asyncio.Semaphore(self._concurrency)
        return self._semaphores[loop]

    async def aclose(self) -> None:
        session = self._sessions.pop(id(asyncio.get_running_loop()), None)
        if session is not None:
            await session.close()

    # ---- the cache ----------------------------------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _read_cache(self, key: str) -> str | None:
        if self.cache_dir is None:
            return None
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None  # a torn or foreign file is a miss, and is rewritten
        reply = entry.get("reply") if isinstance(entry, dict) else None
        return reply if isinstance(reply, str) and entry.get("model") == self.model else None

    def _write_cache(self, key: str, body: dict, reply: str) -> None:
        if self.cache_dir is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps({"model": self.model, "request": body, "reply": reply}, ensure_ascii=False),
                       encoding="utf-8")
        tmp.replace(path)
        self.stats["cache_writes"] += 1
