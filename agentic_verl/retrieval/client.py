"""An async HTTP client for the `/retrieve` protocol (see agentic_verl.retrieval.protocol).

>>> import asyncio
>>> client = RetrievalClient("http://127.0.0.1:8000", timeout_s=5.0)
>>> # passages = asyncio.run(client.retrieve(["who wrote hamlet"], topk=3))  # needs a running server

Every call sends one request for all its queries, has a timeout, and is retried (bounded, with
exponential backoff) only when retrying can help: timeouts, connection errors and 5xx answers.
A 4xx answer means the request itself is wrong and is not retried. Failures raise `RetrievalError`
with a `category` that callers (the search tool) turn into metrics.

When AGENTIC_VERL_RETRIEVAL_TOKEN is set (or `token=` is given), every request carries
`Authorization: Bearer <token>` (see agentic_verl.retrieval.auth). A 401 is a `server_error` (the policy's
arguments are not at fault; the setup is), not retried, and says which variable to set.
"""

from __future__ import annotations

import asyncio
import json
import weakref

# aiohttp, not httpx: httpx 0.28's async connection pool costs grow roughly quadratically with
# concurrent requests (encode/httpcore#1035); at 64 concurrent trajectories it dominated rollout time.
import aiohttp

from agentic_verl.retrieval.auth import TOKEN_ENV, auth_headers
from agentic_verl.retrieval.protocol import Passage, is_valid_unicode

CATEGORIES = ("timeout", "server_error", "bad_arguments")


class RetrievalError(Exception):
    """A failed retrieval. `category` is one of "timeout", "server_error", "bad_arguments"."""

    def __init__(self, category: str, message: str):
        if category not in CATEGORIES:
            raise ValueError(f"unknown retrieval error category {category!r}; known: {CATEGORIES}")
        super().__init__(message)
        self.category = category

    def __str__(self) -> str:
        return f"{self.category}: {self.args[0]}"


class RetrievalClient:
    """Talks to one retrieval server. Safe to share between coroutines, and between event loops
    (an `aiohttp.ClientSession` and a semaphore are created lazily for each loop that uses the client).
    `token`: the server's shared token; default: AGENTIC_VERL_RETRIEVAL_TOKEN at construction, if set."""

    def __init__(
        self,
        url: str,
        timeout_s: float = 10.0,
        max_retries: int = 2,
        backoff_s: float = 0.25,
        max_concurrency: int = 16,
        token: str | None = None,
    ):
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or max_concurrency < 1:
            raise ValueError(
                f"bad RetrievalClient settings: timeout_s={timeout_s} (>0), max_retries={max_retries} (>=0), "
                f"backoff_s={backoff_s} (>=0), max_concurrency={max_concurrency} (>=1)"
            )
        url = url.rstrip("/")
        self.url = url if url.endswith("/retrieve") else url + "/retrieve"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_concurrency = max_concurrency
        self._headers = auth_headers(token)
        # per event loop: (aiohttp session, semaphore); weak keys so a finished loop does not leak
        self._per_loop: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _session(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        session = self._per_loop.get(loop)
        if session is None or session[0].closed:
            connector = aiohttp.TCPConnector(limit=self.max_concurrency, force_close=False)
            http = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout_s), trust_env=False,
                headers=self._headers,
            )
            session = (http, asyncio.Semaphore(self.max_concurrency))
            self._per_loop[loop] = session
            # verl runs agent loops in event loops that end without telling us; close the session
            # with its loop so aiohttp does not warn about it (the finaliser holds it until then).
            weakref.finalize(loop, _close_detached, http)
        return session

    async def retrieve(self, queries: list[str], topk: int = 3) -> list[list[Passage]]:
        """Best-first passages for each query; raises `RetrievalError`."""
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise RetrievalError("bad_arguments", f"queries must be a list of strings, got {type(queries).__name__}")
        if not queries:
            return []
        for i, query in enumerate(queries):  # the server would answer 400 "not valid JSON": say what is wrong
            if not is_valid_unicode(query):
                raise RetrievalError("bad_arguments", f"queries[{i}] is not valid Unicode (it has a lone surrogate)")
        http, semaphore = self._session()
        payload = {"queries": queries, "topk": topk, "return_scores": True}
        last_error: RetrievalError | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                async with semaphore, http.post(self.url, json=payload) as response:
                    status, body = response.status, await response.read()
            except asyncio.TimeoutError as exc:
                last_error = RetrievalError("timeout", f"no answer from {self.url} within {self.timeout_s}s "
                                            f"({type(exc).__name__})")
                continue
            except aiohttp.ClientError as exc:  # connection refused/reset, protocol errors
                last_error = RetrievalError("server_error", f"cannot reach {self.url}: {type(exc).__name__}: {exc}")
                continue
            if status >= 500:
                last_error = RetrievalError("server_error", f"{self.url} answered {status}: {_error_detail(body)}")
                continue
            if status in (401, 403):
                raise RetrievalError("server_error", f"{self.url} refused the request ({status}): "
                                     f"{_error_detail(body)}; {_token_hint(self._headers)}")
            if status >= 400:
                raise RetrievalError("bad_arguments", f"{self.url} rejected the request ({status}): "
                                     f"{_error_detail(body)}")
            return _parse_result(body, len(queries), self.url)
        assert last_error is not None
        if self.max_retries:
            last_error.args = (f"{last_error.args[0]} (after {self.max_retries + 1} attempts)",)
        raise last_error

    async def aclose(self) -> None:
        """Close the HTTP client of the current event loop (others are closed when their loop is collected)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        session = self._per_loop.pop(loop, None)
        if session is not None:
            await session[0].close()


def _token_hint(headers: dict) -> str:
    if headers:
        return f"the token in {TOKEN_ENV} is not the server's"
    return f"the server requires a token: set {TOKEN_ENV} to the server's"


def _close_detached(http: aiohttp.ClientSession) -> None:
    """Close a session whose event loop is gone (no awaiting possible): drop its sockets synchronously."""
    connector = http.connector
    if connector is not None and not http.closed:
        http.detach()
        connector._close()  # the synchronous part of BaseConnector.close(); nothing to await without a loop


def _error_detail(raw: bytes) -> str:
    try:
        body = json.loads(raw)
    except ValueError:
        return raw[:300].decode("utf-8", "replace")
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])[:300]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:300]
    return str(body)[:300]


def _parse_result(raw: bytes, n_queries: int, url: str) -> list[list[Passage]]:
    try:
        result = json.loads(raw)["result"]
        if not isinstance(result, list) or len(result) != n_queries:
            raise ValueError(f"expected {n_queries} result lists, got {type(result).__name__} "
                             f"of length {len(result) if isinstance(result, list) else '?'}")
        parsed = []
        for entries in result:
            passages = []
            for entry in entries:
                document = entry.get("document", entry)  # without return_scores an entry is the document
                if not isinstance(document["contents"], str):  # str() would turn null into a passage "None"
                    raise TypeError(f"a passage's contents must be a string, got {type(document['contents']).__name__}")
                passages.append(Passage(id=str(document.get("id", "")), contents=document["contents"],
                                        score=float(entry.get("score", 0.0))))
            parsed.append(passages)
        return parsed
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RetrievalError("server_error", f"{url} sent a malformed answer: {type(exc).__name__}: {exc}") from exc


def health_problem(url: str, timeout_s: float = 10.0, token: str | None = None) -> str | None:
    """What is wrong with the server at `url` (its `GET /health`), or None when it answers 200. Checked before a
    run starts (preflight, evaluation), so a dead server is an error then, not "Search failed" observations later.
    Sends the token like `RetrievalClient`, so a missing or wrong token is found here too.
    """
    import httpx

    base = url.rstrip("/").removesuffix("/retrieve")
    headers = auth_headers(token)
    try:
        health = httpx.get(base + "/health", timeout=timeout_s, trust_env=False, headers=headers)
    except httpx.HTTPError as exc:
        return f"no answer from {base}/health ({type(exc).__name__}: {exc})"
    if health.status_code == 401 or (not headers and "www-authenticate" in health.headers):
        return f"{base}/health answered {health.status_code} without its details: {_token_hint(headers)}"
    if health.status_code != 200:
        return f"{base}/health answered {health.status_code}: {health.text[:200]}"
    return None
