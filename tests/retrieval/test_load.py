"""Load: 10,000 requests at concurrency 32 against the real server on loopback, 0 errors.

Correctness under load, not speed: the rate is printed (-s) for the record; timing targets live in benchmarks/.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

import httpx
import pytest

N_REQUESTS = 10_000
CONCURRENCY = 32
# word pools drawn from the tiny corpus; random 1-3 word queries give ~thousands of distinct (query, topk) keys,
# so both the cache and the batched backend path are exercised
WORDS = ["hamlet", "shakespeare", "paris", "france", "capital", "berlin", "germany", "python", "rossum", "everest",
         "himalayas", "amazon", "river", "curie", "radioactivity", "tokyo", "japan", "einstein", "relativity",
         "nile", "africa", "mozart", "salzburg", "zürich", "switzerland", "city", "largest", "composer"]
EXPECTED_TOP = {"hamlet": "hamlet", "everest": "everest", "einstein": "einstein", "mozart": "mozart"}


@pytest.mark.slow
async def test_ten_thousand_requests_at_concurrency_32_without_errors(retrieval_server):
    rng = random.Random(0)
    jobs = [(" ".join(rng.sample(WORDS, rng.randint(1, 3))), rng.randint(1, 5)) for _ in range(N_REQUESTS)]
    queue: asyncio.Queue = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    failures: list[str] = []
    checked = 0

    host, port = retrieval_server.host, retrieval_server.port

    async def worker():
        # a minimal HTTP/1.1 keep-alive client: httpx would make the load generator, not the server, the bottleneck
        nonlocal checked
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while True:
                try:
                    query, topk = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                body = json.dumps({"queries": [query], "topk": topk}).encode()
                writer.write(b"POST /retrieve HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
                status, payload = await _read_response(reader)
                if status != 200:
                    failures.append(f"{status}: {payload[:200]!r}")
                    continue
                result = json.loads(payload)["result"]
                if len(result) != 1 or not 1 <= len(result[0]) <= topk:
                    failures.append(f"bad result for {query!r}/{topk}: {result}")
                elif query in EXPECTED_TOP:
                    checked += 1
                    if result[0][0]["id"] != EXPECTED_TOP[query]:
                        failures.append(f"wrong top passage for {query!r}: {result[0][0]['id']}")
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - started
    metrics = httpx.get(retrieval_server.url + "/metrics", trust_env=False).json()
    print(f"\nload: {N_REQUESTS} requests, concurrency {CONCURRENCY}: {elapsed:.1f} s, "
          f"{N_REQUESTS / elapsed:.0f} req/s; cache hits {metrics['cache_hits']}, misses {metrics['cache_misses']}, "
          f"backend calls {metrics['backend_calls']}, latency mean {metrics['latency_ms']['mean']} ms")
    assert failures == [], failures[:5]
    assert checked > 0
    assert metrics["requests"]["by_status"].get("200", 0) >= N_REQUESTS
    assert metrics["backend_calls"] < metrics["cache_misses"] + 1  # misses were batched, never more calls than misses
    assert httpx.get(retrieval_server.url + "/health", trust_env=False).status_code == 200


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    length = int({k.lower(): v for k, v in headers.items()}["content-length"])
    return status, await reader.readexactly(length)
