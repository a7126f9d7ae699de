"""Retrieval throughput and latency: raw engines, the `/retrieve` server, and a naive server as the baseline.

    python benchmarks/bench_retrieval.py                      # bm25s, lucene, dense; prints one table
    python benchmarks/bench_retrieval.py --backends bm25s --passages 20000

What it measures, in one run:
- raw engine: `backend.search` in this process, one query per call and in batches (`--batch`);
- server: `agentic-verl serve retrieval --cache-size 0` (micro-batching, no cache, so every query reaches the
  engine) and `benchmarks/naive_retrieval_server.py` (one backend.search per request under a lock), each loaded
  by an asyncio httpx client in a separate process over loopback at each `--concurrency`, with a bounded number
  of requests of `--queries-per-request` distinct queries (3 = a RAG-R1 multi-query search call) and
  requests/s, queries/s, p50/p99 latency and the CPU used by the server and by the client.

Corpus: deterministic synthetic passages (Zipf-distributed pseudo-words, 40-100 words, a 2-word title), queries
of 3-5 words drawn from random passages; `--passages` for bm25s/lucene, `--dense-passages` (default 5,000: MiniLM
encodes ~50-80 passages/s on 2 cores, 100k would take ~30 min) for dense. Corpora and indexes are cached in
`--cache-dir` (default /tmp/agentic_verl_bench_retrieval), keyed by size (seed 0). Dense runs with one torch
thread per process (`--dense-threads 1`).
"q per CPU-s" divides queries by the CPU time of the process that served them (all its threads): on a machine
shared with other work, wall-clock rates follow the CPU share the scheduler gives, this column does not.
Targets on 2 cores: the bm25s server sustains >= 50% of the raw batched engine's queries/s at concurrency 64,
and p99 < 50 ms at concurrency 16.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from agentic_verl.retrieval.auth import auth_headers

HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "agentic_verl_bench_retrieval"
N_QUERIES = 60_000


# --- synthetic corpus -----------------------------------------------------------------------------------


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "st",
              "tr", "ch", "sh", "pl", "gr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
    syllables = [o + v for o in onsets for v in vowels]
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(2, 5))
        words[''.join(syllables[i] for i in rng.integers(0, len(syllables), n))] = None
    return list(words)


def write_synthetic_corpus(path: Path, queries_path: Path, n_passages: int, seed: int = 0) -> None:
    """`n_passages` passages {"id", "contents": "Title\\ntext"} and N_QUERIES distinct queries drawn from them."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_vocabulary(rng, 30_000))
    probs = 1.0 / np.arange(1, len(vocab) + 1) ** 1.07
    probs /= probs.sum()
    lengths = rng.integers(40, 101, n_passages)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    words = rng.choice(len(vocab), size=int(starts[-1]), p=probs)
    titles = rng.integers(1000, len(vocab), size=(n_passages, 2))
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(n_passages):
            title = " ".join(vocab[titles[i]]).title()
            text = " ".join(vocab[words[starts[i]: starts[i + 1]]])
            f.write(json.dumps({"id": f"s{i}", "contents": f"{title}\n{text}"}) + "\n")
    tmp.rename(path)
    queries: dict[str, None] = {}
    while len(queries) < N_QUERIES:
        doc = int(rng.integers(n_passages))
        k = int(rng.integers(3, 6))
        picks = rng.integers(starts[doc], starts[doc + 1], k)
        queries[" ".join(vocab[words[picks]])] = None
    queries_path.write_text(json.dumps(list(queries)))


def corpus(cache: Path, n_passages: int) -> tuple[Path, list[str]]:
    path, queries_path = cache / f"corpus_{n_passages}.jsonl", cache / f"queries_{n_passages}.json"
    if not (path.is_file() and queries_path.is_file()):
        started = time.time()
        write_synthetic_corpus(path, queries_path, n_passages)
        print(f"# corpus: {n_passages} passages written to {path} in {time.time() - started:.1f} s", flush=True)
    return path, json.loads(queries_path.read_text())


def index(cache: Path, backend: str, corpus_path: Path, n_passages: int) -> Path:
    from agentic_verl.retrieval.corpus import file_sha256
    from agentic_verl.retrieval.index import build_index, read_meta

    out = cache / f"index_{backend}_{n_passages}"
    try:
        if read_meta(out)["corpus"]["sha256"] == file_sha256(corpus_path):
            return out
    except (FileNotFoundError, KeyError):
        pass
    started = time.time()
    build_index(corpus_path, out, backend, overwrite=True, show_progress=backend == "dense")
    print(f"# index: {backend} over {n_passages} passages built in {time.time() - started:.1f} s", flush=True)
    return out


# --- raw engine -----------------------------------------------------------------------------------------


def raw_engine(index_dir: Path, queries: list[str], topk: int, batch: int, budget_s: float) -> dict:
    """Queries/s of backend.search: one query per call, and `batch` queries per call (each ~budget_s)."""
    from agentic_verl.retrieval.index import load_index

    index = load_index(index_dir)
    try:
        index.search(queries[:batch], topk)  # warm up (the JVM's JIT, page cache, thread pools)
        for query in queries[batch: batch + 100]:
            index.search([query], topk)
        out = {}
        for name, size in (("single", 1), ("batched", batch)):
            done, started, cpu, position = 0, time.perf_counter(), time.process_time(), batch
            while time.perf_counter() - started < budget_s and position + size <= len(queries):
                index.search(queries[position: position + size], topk)
                position += size
                done += size
            out[name] = done / (time.perf_counter() - started)
            out[name + "_per_cpu_s"] = done / max(time.process_time() - cpu, 1e-9)  # all threads of this process
        return out
    finally:
        index.close()


# --- servers and load -----------------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class NaiveServer:
    def __init__(self, index_dir: Path):
        from agentic_verl.net import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, str(HERE / "naive_retrieval_server.py"), "--index",
                                         str(index_dir), "--port", str(self.port)])

    def __enter__(self):
        from agentic_verl.net import wait_for_health

        try:
            wait_for_health(self.url, 120, process=self.process, name="naive server", interval_s=0.2)
        except TimeoutError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        from agentic_verl.net import stop_server_process

        stop_server_process(self.process)


def run_load(url: str, pid: int, queries_file: Path, offset: int, concurrency: int, n_requests: int, qpr: int,
             topk: int) -> dict:
    """One load level from a separate client process; adds the server's CPU seconds over the timed part."""
    command = [sys.executable, __file__, "loadgen", "--url", url, "--queries-file", str(queries_file),
               "--offset", str(offset), "--concurrency", str(concurrency), "--requests", str(n_requests),
               "--queries-per-request", str(qpr), "--topk", str(topk), "--server-pid", str(pid)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"load generator failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


async def _loadgen(args) -> dict:
    import httpx

    queries = json.loads(Path(args.queries_file).read_text())
    qpr, n = args.queries_per_request, args.requests
    warmup = 2 * args.concurrency
    needed = (warmup + n) * qpr
    if needed > len(queries):
        raise SystemExit(f"need {needed} distinct queries, have {len(queries)}")
    start = args.offset % len(queries)
    queries = (queries[start:] + queries[:start])[:needed]
    url = args.url.rstrip("/") + "/retrieve"
    latencies: list[float] = []
    errors: list[str] = []
    # One client (one keep-alive connection) per simulated caller, like one tool instance per rollout worker;
    # a single AsyncClient with a 64-connection pool spends more CPU managing the pool than sending requests.
    clients = [httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=120.0, trust_env=False,
                                 headers=auth_headers())  # the server's token, when one is exported
               for _ in range(args.concurrency)]
    counter = iter(range(warmup + n))

    async def worker(client, timed: bool, stop: int):
        for i in counter:
            if i >= stop:
                return
            body = {"queries": queries[i * qpr: (i + 1) * qpr], "topk": args.topk}
            t = time.perf_counter()
            response = await client.post(url, json=body)
            latency = time.perf_counter() - t
            if response.status_code != 200 or len(response.json()["result"]) != qpr:
                errors.append(f"{response.status_code}: {response.text[:200]}")
            elif timed:
                latencies.append(latency)

    try:
        await asyncio.gather(*(worker(c, False, warmup) for c in clients))  # opens the connections
        counter = iter(range(warmup, warmup + n))
        server_cpu, client_cpu = _cpu_seconds(args.server_pid), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(worker(c, True, warmup + n) for c in clients))
        elapsed = time.perf_counter() - started
        server_cpu, client_cpu = _cpu_seconds(args.server_pid) - server_cpu, time.process_time() - client_cpu
    finally:
        for client in clients:
            await client.aclose()
    lat = np.asarray(latencies) * 1000
    return {"requests": len(latencies), "errors": len(errors), "first_error": errors[0] if errors else None,
            "seconds": elapsed, "rps": len(latencies) / elapsed, "qps": len(latencies) * qpr / elapsed,
            "p50_ms": float(np.percentile(lat, 50)) if len(lat) else None,
            "p99_ms": float(np.percentile(lat, 99)) if len(lat) else None,
            "server_cpu": server_cpu / elapsed, "client_cpu": client_cpu / elapsed}


def _metrics(url: str) -> dict:
    import httpx

    return httpx.get(url + "/metrics", timeout=10, trust_env=False).json()


# --- the run --------------------------------------------------------------------------------------------


COLUMNS = ("backend", "passages", "engine / server", "conc.", "requests", "req/s", "q/s", "p50 ms", "p99 ms",
           "q per CPU-s", "CPU server / client", "q per engine call")


def bench(args) -> None:
    from agentic_verl.retrieval.server import ServerProcess

    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    levels = [int(c) for c in args.concurrency.split(",")]
    qpr, rows, notes = args.queries_per_request, [], []
    if args.dense_threads:  # read by the dense backend here and in the servers (they inherit the environment)
        os.environ["AGENTIC_VERL_DENSE_THREADS"] = str(args.dense_threads)
        notes.append(f"dense: torch limited to {args.dense_threads} thread(s) per process (AGENTIC_VERL_DENSE_THREADS)"
                     " in the raw engine and both servers")
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; {qpr} distinct queries per "
          f"request, topk={args.topk}, server cache off", flush=True)
    for backend in args.backends.split(","):
        n_passages = args.dense_passages if backend == "dense" else args.passages
        corpus_path, queries = corpus(cache, n_passages)
        queries_file = cache / f"queries_{n_passages}.json"
        index_dir = index(cache, backend, corpus_path, n_passages)
        batch = args.batch if backend != "dense" else min(args.batch, 64)
        raw = raw_engine(index_dir, queries, args.topk, batch, args.raw_seconds)
        print(f"# {backend}: raw {raw['single']:.0f} q/s single, {raw['batched']:.0f} q/s in batches of {batch}",
              flush=True)
        for name, label in (("single", "raw engine, 1 query/call"), ("batched", f"raw engine, {batch} queries/call")):
            rows.append({"backend": backend, "passages": n_passages, "engine / server": label, "q/s": raw[name],
                         "q per CPU-s": raw[name + "_per_cpu_s"]})
        offset = 0
        for server_name in ("agentic-verl serve", "naive (lock, no batching)"):
            if server_name.startswith("naive"):
                server = NaiveServer(index_dir)
            else:
                server = ServerProcess(["--index", str(index_dir), "--cache-size", "0"], startup_timeout_s=180)
            with server:
                pid = server.process.pid
                for concurrency in levels:
                    expected_rps = (raw["single"] if concurrency == 1 else raw["batched"]) / qpr
                    n_requests = int(min(max(expected_rps * args.seconds, args.min_requests, 8 * concurrency),
                                         args.max_requests))
                    before = _metrics(server.url) if server_name.startswith("agentic") else None
                    result = run_load(server.url, pid, queries_file, offset, concurrency, n_requests, qpr,
                                      args.topk)
                    offset += (n_requests + 2 * concurrency) * qpr
                    if result["errors"]:
                        notes.append(f"{backend} {server_name} c={concurrency}: {result['errors']} errors, first: "
                                     f"{result['first_error']}")
                    row = {"backend": backend, "passages": n_passages, "engine / server": server_name,
                           "conc.": concurrency, "requests": result["requests"], "req/s": result["rps"],
                           "q/s": result["qps"], "p50 ms": result["p50_ms"], "p99 ms": result["p99_ms"],
                           "q per CPU-s": result["qps"] / max(result["server_cpu"], 1e-9),
                           "CPU server / client": f"{100 * result['server_cpu']:.0f}% / "
                                                  f"{100 * result['client_cpu']:.0f}%"}
                    if before is not None:
                        after = _metrics(server.url)
                        calls = after["backend_calls"] - before["backend_calls"]
                        row["q per engine call"] = (after["backend_queries"] - before["backend_queries"]) / max(calls, 1)
                    rows.append(row)
                    print(f"#   {server_name} c={concurrency}: {result['rps']:.0f} req/s, {result['qps']:.0f} q/s, "
                          f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms", flush=True)
        if backend == "bm25s":
            ours = {r["conc."]: r for r in rows if r["backend"] == "bm25s" and r["engine / server"] == "agentic-verl serve"}
            if 64 in ours:
                share, cpu_share = ours[64]["q/s"] / raw["batched"], ours[64]["q per CPU-s"] / raw["batched_per_cpu_s"]
                notes.append(f"target: bm25s server q/s at c=64 >= 50% of raw batched q/s: {100 * share:.0f}% "
                             f"({'met' if share >= 0.5 else 'MISSED'}); per CPU-second: {100 * cpu_share:.0f}%")
            if 16 in ours:
                p99 = ours[16]["p99 ms"]
                notes.append(f"target: bm25s server p99 at c=16 < 50 ms: {p99:.1f} ms "
                             f"({'met' if p99 < 50 else 'MISSED'})")
    notes.append(f"load average at the end: {os.getloadavg()[0]:.1f} (other work on this machine shares its CPUs)")
    print_table(rows)
    for note in notes:
        print(f"- {note}")


def print_table(rows: list[dict]) -> None:
    def cell(value):
        if isinstance(value, float):
            return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
        if isinstance(value, int):
            return f"{value:,}"
        return "-" if value is None else str(value)

    print()
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in rows:
        print("| " + " | ".join(cell(row.get(column)) for column in COLUMNS) + " |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "loadgen":
        parser = argparse.ArgumentParser(prog="bench_retrieval.py loadgen")
        parser.add_argument("--url", required=True)
        parser.add_argument("--queries-file", required=True)
        parser.add_argument("--offset", type=int, default=0)
        parser.add_argument("--concurrency", type=int, required=True)
        parser.add_argument("--requests", type=int, required=True)
        parser.add_argument("--queries-per-request", type=int, default=3)
        parser.add_argument("--topk", type=int, default=3)
        parser.add_argument("--server-pid", type=int, required=True)
        args = parser.parse_args(sys.argv[2:])
        print(json.dumps(asyncio.run(_loadgen(args))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="bm25s,lucene,dense")
    parser.add_argument("--passages", type=int, default=100_000, help="corpus size for bm25s and lucene")
    parser.add_argument("--dense-passages", type=int, default=5_000, help="corpus size for dense (encoding is slow)")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--queries-per-request", type=int, default=3)
    parser.add_argument("--topk", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256, help="queries per raw batched call (dense: at most 64)")
    parser.add_argument("--raw-seconds", type=float, default=3.0, help="time budget of each raw measurement")
    parser.add_argument("--seconds", type=float, default=4.0, help="aim of each load level, if the server kept "
                        "up with the raw engine (bounded by --min/--max-requests)")
    parser.add_argument("--min-requests", type=int, default=100)
    parser.add_argument("--max-requests", type=int, default=4000)
    parser.add_argument("--dense-threads", type=int, default=1, help="torch threads for dense (0: torch's default); "
                        "on a busy 2-core machine 2 threads encode ~10x slower than 1")
    parser.add_argument("--cache-dir", default=str(DEFAULT_CACHE))
    bench(parser.parse_args())


if __name__ == "__main__":
    main()
