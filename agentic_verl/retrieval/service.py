"""`RetrievalService`: what the `/retrieve` server does, usable in-process without HTTP.

- validation: the request limits (`Limits`), with errors that say what is wrong (`RequestError`, an HTTP status);
- micro-batching: one worker thread drains every pending request, runs one `backend.search` for all their
  (deduplicated) queries and resolves the waiting futures; backends are never called from two threads;
- an LRU cache keyed by (query, topk);
- record / replay: `record=FILE` appends every newly computed (query, topk) result to a JSONL file;
  `replay=FILE` serves only from such a file (no index needed), and a query that was not recorded is a 404
  that names it, so an evaluation re-runs deterministically;
- metrics (see `ServiceMetrics.snapshot`).

>>> import json, os, tempfile
>>> from agentic_verl.retrieval.index import build_index
>>> folder = tempfile.mkdtemp(); corpus = os.path.join(folder, "c.jsonl")
>>> _ = open(corpus, "w").write(json.dumps({"id": "1", "contents": "Paris\\nCapital of France"}) + "\\n")
>>> _ = build_index(corpus, os.path.join(folder, "index"), show_progress=False)
>>> service = RetrievalService.from_index_dir(os.path.join(folder, "index"))
>>> [p.id for p in service.search_sync(["capital of france"], topk=3)[0]]
['1']
>>> service.close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import queue
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path

from agentic_verl.retrieval.index import Index, load_index
from agentic_verl.retrieval.protocol import Passage, is_valid_unicode


@dataclass(frozen=True)
class Limits:
    """What one `/retrieve` request may ask for.

    max_queries 1024: one tool call sends a handful; an evaluation batch of 1024 takes ~0.1 s with bm25s, and a
    bigger request would hold the shared batch queue (everyone's latency) for longer. Split bigger jobs.
    max_query_chars 4096: a search query, not a document. max_topk 100. max_body_bytes 8 MiB.
    """

    max_queries: int = 1024
    max_query_chars: int = 4096
    max_topk: int = 100
    max_body_bytes: int = 8 << 20

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, got {value!r}")


class RequestError(Exception):
    """A request the service refuses; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def validate(queries: object, topk: object, limits: Limits) -> None:
    """Raise RequestError for anything outside `limits` (types are checked too, for in-process callers)."""
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RequestError(422, "queries must be a list of strings")
    if isinstance(topk, bool) or not isinstance(topk, int):
        raise RequestError(422, f"topk must be an integer, got {type(topk).__name__}")
    if not queries:
        raise RequestError(422, "queries is empty: send at least one query")
    if len(queries) > limits.max_queries:
        raise RequestError(413, f"{len(queries)} queries in one request; the limit is {limits.max_queries} "
                           "(split the request, or start the server with a larger --max-queries)")
    if not 1 <= topk <= limits.max_topk:
        raise RequestError(422, f"topk must be between 1 and {limits.max_topk}, got {topk}")
    for i, query in enumerate(queries):
        if not query.strip():
            raise RequestError(422, f"queries[{i}] is empty")
        if len(query) > limits.max_query_chars:
            raise RequestError(413, f"queries[{i}] has {len(query)} characters; the limit is {limits.max_query_chars}")
        if not is_valid_unicode(query):
            raise RequestError(422, f"queries[{i}] is not valid Unicode (it has a lone surrogate)")


class ServiceMetrics:
    """Counters and histograms, updated from the event loop and the worker thread."""

    LATENCY_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
    BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)

    def __init__(self):
        self._lock = threading.Lock()
        self.started = time.time()
        self.requests: dict[str, int] = {}
        self.latency = [0] * (len(self.LATENCY_BUCKETS_MS) + 1)
        self.latency_sum_s = 0.0
        self.batch_queries = [0] * (len(self.BATCH_BUCKETS) + 1)
        self.batch_requests = [0] * (len(self.BATCH_BUCKETS) + 1)
        self.counters = {"queries": 0, "cache_hits": 0, "cache_misses": 0, "replay_misses": 0,
                         "backend_calls": 0, "backend_queries": 0, "backend_errors": 0}
        self.backend_seconds = 0.0

    @staticmethod
    def _bucket(buckets: tuple, value: float) -> int:
        for i, bound in enumerate(buckets):
            if value <= bound:
                return i
        return len(buckets)

    def observe_request(self, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[str(status)] = self.requests.get(str(status), 0) + 1
            self.latency[self._bucket(self.LATENCY_BUCKETS_MS, seconds * 1000)] += 1
            self.latency_sum_s += seconds

    def observe_batch(self, n_requests: int, n_queries: int, seconds: float, ok: bool) -> None:
        with self._lock:
            self.batch_queries[self._bucket(self.BATCH_BUCKETS, n_queries)] += 1
            self.batch_requests[self._bucket(self.BATCH_BUCKETS, n_requests)] += 1
            self.counters["backend_calls"] += 1
            self.counters["backend_queries"] += n_queries
            self.counters["backend_errors"] += 0 if ok else 1
            self.backend_seconds += seconds

    def count(self, name: str, n: int = 1) -> None:
        """Add `n` to the counter `name` (a new name starts at 0; the replica front adds its own)."""
        with self._lock:
            self.counters[name] = self.counters.get(name, 0) + n

    def snapshot(self) -> dict:
        def histogram(buckets, counts):
            labels = [f"le_{b}" for b in buckets] + ["inf"]
            return dict(zip(labels, counts, strict=True))

        with self._lock:
            total = sum(self.requests.values())
            return {
                "uptime_s": round(time.time() - self.started, 3),
                "requests": {"total": total, "by_status": dict(self.requests)},
                "latency_ms": {"histogram": histogram(self.LATENCY_BUCKETS_MS, self.latency),
                               "mean": round(1000 * self.latency_sum_s / total, 3) if total else None},
                "batches": {"queries_per_backend_call": histogram(self.BATCH_BUCKETS, self.batch_queries),
                            "requests_per_backend_call": histogram(self.BATCH_BUCKETS, self.batch_requests),
                            "backend_seconds": round(self.backend_seconds, 6)},
                **dict(self.counters),
            }


class _Job:
    __slots__ = ("queries", "topk", "future")

    def __init__(self, queries: list[str], topk: int):
        self.queries, self.topk = queries, topk
        self.future: concurrent.futures.Future = concurrent.futures.Future()


class _Batcher:
    """One worker thread: drain the queue, one backend.search for everything pending, resolve the futures."""

    def __init__(self, index: Index, metrics: ServiceMetrics, max_batch_queries: int):
        self._index, self._metrics, self._max = index, metrics, max_batch_queries
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="retrieval-batcher", daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, queries: list[str], topk: int) -> concurrent.futures.Future:
        job = _Job(queries, topk)
        self._queue.put(job)
        return job.future

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            self._loop()
        finally:  # whatever is still queued after a stop gets an answer instead of waiting forever
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not None and job.future.set_running_or_notify_cancel():
                    job.future.set_exception(RuntimeError("the retrieval service is shutting down"))

    def _loop(self) -> None:
        stopping = False
        while not stopping:
            job = self._queue.get()
            if job is None:
                return
            jobs, n = [job], len(job.queries)
            while n < self._max:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stopping = True
                    break
                jobs.append(job)
                n += len(job.queries)
            jobs = [job for job in jobs if job.future.set_running_or_notify_cancel()]
            if jobs:
                self._search(jobs)

    def _search(self, jobs: list[_Job]) -> None:
        unique = list(dict.fromkeys(q for job in jobs for q in job.queries))
        topk = max(job.topk for job in jobs)  # results are best-first, so a smaller topk is a prefix
        started = time.perf_counter()
        try:
            results = self._index.search(unique, topk)
            if len(results) != len(unique):
                raise RuntimeError(f"backend returned {len(results)} result lists for {len(unique)} queries")
        except Exception as exc:  # the server stays up; every waiting request gets a 500 that says why
            self._metrics.observe_batch(len(jobs), len(unique), time.perf_counter() - started, ok=False)
            for job in jobs:
                job.future.set_exception(exc)
            return
        self._metrics.observe_batch(len(jobs), len(unique), time.perf_counter() - started, ok=True)
        by_query = dict(zip(unique, results, strict=True))
        for job in jobs:
            job.future.set_result([by_query[q][: job.topk] for q in job.queries])


class _LRU:
    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _passages_to_json(passages) -> list[dict]:
    return [{"id": p.id, "contents": p.contents, "score": p.score} for p in passages]


def _passages_from_json(entries: list[dict]) -> tuple[Passage, ...]:
    return tuple(Passage(id=str(e["id"]), contents=e["contents"], score=float(e.get("score", 0.0))) for e in entries)


class _Recorder:
    """Appends `{"query", "topk", "result"}` lines; the first line of a new file is `{"_meta": index_meta}`."""

    def __init__(self, path: Path, meta: dict):
        self.path = path
        new = not (path.is_file() and path.stat().st_size)
        self._seen: set = set()
        if not new:  # appending: the file must come from the same index, or replay would mix two indexes
            existing = _ReplayStore(path)
            if existing.meta and _identity(existing.meta) != _identity(meta):
                raise ValueError(f"record file {path} was recorded from another index "
                                 f"({_identity(existing.meta)} vs {_identity(meta)}); record to a new file")
            self._seen = set(existing.keys())
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()
        if new:
            self._file.write(json.dumps({"_meta": meta}, ensure_ascii=False) + "\n")
            self._file.flush()

    def record(self, query: str, topk: int, passages) -> None:
        with self._lock:
            if (query, topk) in self._seen:
                return
            self._seen.add((query, topk))
            line = {"query": query, "topk": topk, "result": _passages_to_json(passages)}
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _identity(meta: dict) -> tuple:
    corpus = meta.get("corpus") or {}
    return meta.get("backend"), corpus.get("sha256"), meta.get("options"), meta.get("built_at")


class _ReplayStore:
    """(query, topk) -> passages from a record file; a recorded larger topk also answers a smaller one."""

    def __init__(self, path: Path):
        if not path.is_file():
            raise FileNotFoundError(f"replay file {path} does not exist")
        self.path, self.meta = path, {}
        self._by_query: dict[str, dict[int, tuple[Passage, ...]]] = {}
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    if "_meta" in record:
                        self.meta = record["_meta"]
                        continue
                    passages = _passages_from_json(record["result"])
                    self._by_query.setdefault(record["query"], {})[int(record["topk"])] = passages
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}:{lineno}: not a record line ({type(exc).__name__}: {exc})") from None

    def keys(self):
        return [(q, k) for q, by_k in self._by_query.items() for k in by_k]

    def __len__(self) -> int:
        return sum(len(by_k) for by_k in self._by_query.values())

    def get(self, query: str, topk: int) -> tuple[Passage, ...] | None:
        by_k = self._by_query.get(query, {})
        if topk in by_k:
            return by_k[topk]
        larger = [k for k in by_k if k > topk]
        return by_k[min(larger)][:topk] if larger else None


class RetrievalService:
    """Search an index (or a replay file) with validation, batching, caching, recording and metrics.

    `await search(...)` from an event loop (the HTTP server, an in-process tool), or `search_sync(...)`.
    """

    def __init__(self, index: Index | None = None, *, cache_size: int = 100_000, limits: Limits | None = None,
                 record: str | Path | None = None, replay: str | Path | None = None,
                 max_batch_queries: int = 4096):
        if (index is None) == (replay is None):
            raise ValueError("give exactly one of an index or a replay file")
        if replay is not None and record is not None:
            raise ValueError("--record and --replay cannot be combined")
        self.limits = limits or Limits()
        self.metrics = ServiceMetrics()
        self.index = index
        self._cache = _LRU(cache_size)
        self._replay = _ReplayStore(Path(replay)) if replay is not None else None
        self.meta = index.meta if index is not None else self._replay.meta
        self._recorder = _Recorder(Path(record), self.meta) if record is not None else None
        self._batcher = _Batcher(index, self.metrics, max_batch_queries) if index is not None else None
        self._closed = False

    @classmethod
    def from_index_dir(cls, index_dir: str | Path, **kwargs) -> RetrievalService:
        return cls(load_index(index_dir), **kwargs)

    @property
    def mode(self) -> str:
        return "replay" if self._replay is not None else "index"

    def healthy(self) -> bool:
        return not self._closed and (self._batcher is None or self._batcher.is_alive())

    def describe(self) -> dict:
        """What /health reports: the index meta, the mode and the limits."""
        return {
            "mode": self.mode,
            "index": self.meta,
            "replay": {"path": str(self._replay.path), "records": len(self._replay)} if self._replay else None,
            "record": str(self._recorder.path) if self._recorder else None,
            "cache": {"size": self._cache.size, "entries": len(self._cache)},
            "limits": asdict(self.limits),
        }

    async def search(self, queries: list[str], topk: int = 3) -> list[list[Passage]]:
        """Best-first passages per query; raises RequestError for bad input and unrecorded replay queries."""
        if self._closed:
            raise RequestError(503, "the retrieval service is closed")
        validate(queries, topk, self.limits)
        self.metrics.count("queries", len(queries))
        found: dict[str, tuple[Passage, ...]] = {}
        missing: list[str] = []
        for query in dict.fromkeys(queries):
            cached = self._cache.get((query, topk))
            if cached is not None:
                found[query] = cached
            else:
                missing.append(query)
        self.metrics.count("cache_hits", len(found))
        self.metrics.count("cache_misses", len(missing))
        if missing and self._replay is not None:
            for query in missing:
                passages = self._replay.get(query, topk)
                if passages is None:
                    self.metrics.count("replay_misses")
                    raise RequestError(404, f"query {query[:200]!r} (topk={topk}) was not recorded in "
                                       f"{self._replay.path}; replay serves only recorded queries")
                found[query] = passages
        elif missing:
            future = self._batcher.submit(missing, topk)
            results = await asyncio.wrap_future(future)
            for query, passages in zip(missing, results, strict=True):
                found[query] = passages = tuple(passages)
                if self._recorder is not None:
                    self._recorder.record(query, topk, passages)
        for query in missing:
            self._cache.put((query, topk), found[query])
        return [list(found[query]) for query in queries]

    def search_sync(self, queries: list[str], topk: int = 3) -> list[list[Passage]]:
        """`search` for code without an event loop."""
        return asyncio.run(self.search(queries, topk))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._batcher is not None:
            self._batcher.stop()
        if self._recorder is not None:
            self._recorder.close()
        if self.index is not None:
            self.index.close()
