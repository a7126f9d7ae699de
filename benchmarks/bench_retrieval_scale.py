"""Retrieval at Wikipedia scale: sharded BM25 and dense IVF-PQ at 1M and 5M passages, extrapolated to 21M.

    python benchmarks/bench_retrieval_scale.py                                    # 1M + 5M each (hours; ~40 GB disk)
    # what the table in docs/results.md ran (~1 h on 2 cores):  --passages 1000000,5000000 --dense-passages 1000000,2000000
    python benchmarks/bench_retrieval_scale.py --passages 50000 --dense-passages 50000 --shard-size 20000  # a check

Per backend and size, one row: build time and peak RSS of `agentic-verl index build --shards N` (a subprocess,
`--shard-size` passages a shard), the index folder's size on disk, the time `load_index` takes and the process's
RSS after it (a subprocess), `index info`'s serving-memory estimate, the raw engine's queries/s (one query per
call), and `agentic-verl serve retrieval --cache-size 0` at concurrency 16 (requests of 3 distinct queries, from the
load generator of bench_retrieval.py in another process): queries/s, p99 and the server's peak RSS. Then a row
extrapolated to `--target` passages (21M: the KILT / DPR Wikipedia passages RAG-R1 and Search-R1 retrieve from),
with the assumptions printed under the table.

Data (deterministic, seed 0, cached in `--cache-dir`):
- bm25s: synthetic passages of 100 Zipf pseudo-words (the KILT passage length) and a 2-word title, queries of 3-5
  words drawn from random passages (bench_retrieval.py's generator, streamed in blocks so memory stays flat);
- dense: the same passages with synthetic vectors instead of encoded ones (no CPU encodes millions of passages):
  384-d (all-MiniLM-L6-v2's size, so the server encodes real queries with it), drawn around 4,096 random centres
  and normalised, given to the build as `-o embeddings=vectors.npy`; faiss ivfpq with its defaults (ivf_nlist
  4 sqrt(n), pq_m 48 = 48 bytes a vector, ivf_nprobe 16). The vector file is deleted once its index is built.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "agentic_verl_bench_retrieval_scale"
BLOCK = 100_000  # passages generated per block
N_QUERIES = 30_000
DIM = 384


# --- data -----------------------------------------------------------------------------------------------


def corpus(cache: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """corpus_<n>.jsonl and queries_<n>.json, written block by block (each block has its own seeded generator)."""
    from bench_retrieval import _vocabulary

    path, queries_path = cache / f"corpus_{n}.jsonl", cache / f"queries_{n}.json"
    if path.is_file() and queries_path.is_file():
        return path, queries_path
    started = time.time()
    vocab = np.array(_vocabulary(np.random.default_rng(seed), 30_000))
    probs = 1.0 / np.arange(1, len(vocab) + 1) ** 1.07
    probs /= probs.sum()
    queries: dict[str, None] = {}
    per_block = math.ceil(2 * N_QUERIES / math.ceil(n / BLOCK))
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for block, first in enumerate(range(0, n, BLOCK)):
            rng = np.random.default_rng([seed, block])
            size = min(BLOCK, n - first)
            words = rng.choice(len(vocab), size=(size, 100), p=probs)
            titles = rng.integers(1000, len(vocab), size=(size, 2))
            for i in range(size):
                text = " ".join(vocab[words[i]])
                f.write(json.dumps({"id": f"s{first + i}", "contents": f"{' '.join(vocab[titles[i]]).title()}\n{text}"})
                        + "\n")
            for doc in rng.integers(0, size, per_block):
                picks = rng.integers(0, 100, int(rng.integers(3, 6)))
                queries[" ".join(vocab[words[doc, picks]])] = None
    tmp.rename(path)
    queries_path.write_text(json.dumps(list(queries)[:N_QUERIES]))
    print(f"# corpus: {n:,} passages in {time.time() - started:.0f} s -> {path}", flush=True)
    return path, queries_path


def vectors(cache: Path, n: int, seed: int = 0) -> Path:
    """vectors_<n>.npy: n normalised DIM-d float32 rows around 4,096 centres, written block by block."""
    path = cache / f"vectors_{n}.npy"
    if path.is_file():
        return path
    centres = np.random.default_rng(seed).standard_normal((4096, DIM)).astype(np.float32)
    tmp = cache / f"vectors_{n}.tmp.npy"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, DIM))
    for block, first in enumerate(range(0, n, BLOCK)):
        rng = np.random.default_rng([seed, 1, block])
        size = min(BLOCK, n - first)
        rows = centres[rng.integers(0, len(centres), size)] + 0.6 * rng.standard_normal((size, DIM), dtype=np.float32)
        out[first : first + size] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    out.flush()
    del out
    tmp.rename(path)
    return path


# --- measurements ---------------------------------------------------------------------------------------


def build(backend: str, n: int, corpus_path: Path, out: Path, shard_size: int, extra: list[str]) -> dict:
    """Build in a subprocess (cached by size); its wall time and peak RSS (from wait4)."""
    done = out.parent / (out.name + ".build.json")
    if done.is_file() and (out / "index_meta.json").is_file():
        return json.loads(done.read_text())
    shards = max(1, math.ceil(n / shard_size))
    command = [str(Path(sys.executable).parent / "agentic-verl"), "index", "build", "--corpus", str(corpus_path),
               "--out", str(out), "--backend", backend, "--shards", str(shards), "--overwrite", "--no-progress",
               *extra]
    started = time.time()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"build failed ({status}): {' '.join(command)}")
    result = {"shards": shards, "build_s": time.time() - started, "build_rss": usage.ru_maxrss * 1024,
              "disk": sum(f.stat().st_size for f in out.rglob("*") if f.is_file())}
    done.write_text(json.dumps(result))
    return result


def engine(index_dir: Path, queries_path: Path, seconds: float) -> dict:
    """load_index time, RSS after loading, and single-query q/s, measured in a fresh process."""
    command = [sys.executable, __file__, "engine", "--index", str(index_dir), "--queries-file", str(queries_path),
               "--seconds", str(seconds)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"engine measurement failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _engine_main(args) -> None:
    from agentic_verl.retrieval.index import load_index

    queries = json.loads(Path(args.queries_file).read_text())
    started = time.perf_counter()
    index = load_index(args.index)
    load_s = time.perf_counter() - started
    rss_after_load = _rss(os.getpid())
    index.search(queries[:16], 10)  # warm up
    result = {"load_s": load_s, "rss_after_load": rss_after_load,
              "raw_qps": _rate(lambda i: index.search([queries[16 + i]], 10), args.seconds, len(queries) - 16)}
    encoder = getattr(index.backend, "encoder", None)
    if encoder is not None:  # dense: the index alone, queries encoded beforehand (the encoder's cost is constant)
        vectors = encoder.queries(queries[:256])
        result["index_qps"] = _rate(lambda i: index.backend.search_vectors(vectors[i % 256 : i % 256 + 1], 10),
                                    args.seconds, 10**9)
    else:
        result["index_qps"] = result["raw_qps"]
    print(json.dumps(result))


def _rate(call, seconds: float, limit: int) -> float:
    """Calls per second of call(i), i = 0, 1, ..., for about `seconds`."""
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds and done < limit:
        call(done)
        done += 1
    return done / (time.perf_counter() - started)


def serve(index_dir: Path, queries_path: Path, n_requests: int) -> dict:
    """`agentic-verl serve retrieval` at concurrency 16: q/s, p99 and the server's peak RSS (VmHWM)."""
    from bench_retrieval import run_load

    from agentic_verl.retrieval.server import ServerProcess

    with ServerProcess(["--index", str(index_dir), "--cache-size", "0"], startup_timeout_s=1800) as server:
        pid = server.process.pid
        result = run_load(server.url, pid, queries_path, 0, 16, n_requests, 3, 3)
        peak = _rss(pid, "VmHWM")
    if result["errors"]:
        raise RuntimeError(f"server errors: {result['first_error']}")
    return {"server_qps": result["qps"], "p99_ms": result["p99_ms"], "server_rss": peak}


def estimate(index_dir: Path) -> int:
    from agentic_verl.retrieval.footprint import serving_estimate, totals
    from agentic_verl.retrieval.index import read_meta

    return totals(serving_estimate(index_dir, read_meta(index_dir)))["full_speed"]


def _rss(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


# --- extrapolation and the table ------------------------------------------------------------------------

LINEAR = ("build_s", "disk", "load_s", "rss_after_load", "server_rss", "estimate")
RATES = ("raw_qps", "index_qps", "server_qps")
COLUMNS = (("backend", "backend"), ("passages", "passages"), ("shards", "shards"), ("build_s", "build s"),
           ("build_rss", "build peak RSS"), ("disk", "disk"), ("load_s", "load s"),
           ("rss_after_load", "RSS after load"), ("estimate", "index info estimate"), ("raw_qps", "raw q/s (1/call)"),
           ("index_qps", "index-only q/s (1/call)"), ("server_qps", "server q/s c=16"), ("p99_ms", "p99 ms c=16"),
           ("server_rss", "server peak RSS"))


def extrapolate(rows: list[dict], target: int, shard_size: int, exponent: float) -> dict:
    """A row for `target` passages from the two largest measured sizes (the assumptions are in ASSUMPTIONS)."""
    small, big = sorted(rows, key=lambda r: r["passages"])[-2:]

    def line(x_small: float, x_big: float, y_small: float, y_big: float, x: float) -> float:
        # nothing here shrinks as n grows: a smaller value at the larger size is noise, kept as the larger size's
        return y_big + max(0.0, (y_big - y_small) / (x_big - x_small)) * (x - x_big)

    n_small, n_big = small["passages"], big["passages"]
    out = {"backend": big["backend"], "passages": f"{target:,} (extrapolated)",
           "shards": max(1, math.ceil(target / shard_size))}
    for key in LINEAR:
        out[key] = line(n_small, n_big, small[key], big[key], target)
    out["build_rss"] = max(small["build_rss"], big["build_rss"])  # bounded by the shard size, not the corpus
    for key in (*RATES, "p99_ms"):  # seconds per query (or p99) = a + b n^exponent
        invert = key in RATES
        y_small, y_big = (1 / small[key], 1 / big[key]) if invert else (small[key], big[key])
        y = line(n_small**exponent, n_big**exponent, y_small, y_big, target**exponent)
        out[key] = 1 / y if invert else y
    return out


ASSUMPTIONS = [
    "extrapolated from the two largest sizes: build time, disk, load time, RSS after load, server RSS and the "
    "estimate on a straight line in n; build peak RSS stays that of the largest size (one shard at a time, the same "
    "--shard-size); the time a query takes (1 / q/s, and p99) is a + b n for bm25s (it scores every passage of every "
    "shard: its work grows with n) and a + b sqrt(n) for dense ivfpq (ivf_nlist = 4 sqrt(n) cells, a query scans "
    "ivf_nprobe of them); the constant a holds the encoder (dense), HTTP and JSON; a value that did not grow "
    "between the two sizes is kept at the larger size's",
    "load s includes numba's compilation of bm25s's kernels (~10-40 s on 2 cores, once per process) and, for dense, "
    "loading torch and the encoder",
    "dense 21M with e5-base-v2 (768-d, pq_m 96): the ivfpq codes and the embeddings kept on disk double; flat "
    "768-d would need 21M x 768 x 4 B = 64.5 GB of RAM",
]


def _cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key in ("build_rss", "disk", "rss_after_load", "estimate", "server_rss"):
        from agentic_verl.retrieval.footprint import format_bytes

        return format_bytes(value)
    if isinstance(value, float):
        return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_table(rows: list[dict], notes: list[str]) -> None:
    print()
    print("| " + " | ".join(label for _, label in COLUMNS) + " |")
    print("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in rows:
        print("| " + " | ".join(_cell(key, row.get(key)) for key, _ in COLUMNS) + " |")
    for note in notes:
        print(f"- {note}")


def bench(args) -> None:
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; cache {cache}", flush=True)
    plans = [("bm25s", [int(n) for n in args.passages.split(",") if n], [], 1.0),
             ("dense", [int(n) for n in args.dense_passages.split(",") if n],
              ["--dense-index", "ivfpq"], 0.5)]
    table: list[dict] = []
    for backend, sizes, extra, exponent in plans:
        measured = []
        for n in sizes:
            corpus_path, queries_path = corpus(cache, n)
            out = cache / f"index_{backend}_{n}"
            options = list(extra)
            vector_file = None
            if backend == "dense" and not (out / "index_meta.json").is_file():
                vector_file = vectors(cache, n)
                options += ["-o", f"embeddings={vector_file}"]
            row = {"backend": backend + (" ivfpq" if backend == "dense" else ""), "passages": n}
            row.update(build(backend, n, corpus_path, out, args.shard_size, options))
            if vector_file is not None:
                vector_file.unlink()  # the shards hold their copies
            print(f"# {backend} {n:,}: built in {row['build_s']:.0f} s, peak RSS {row['build_rss'] / 2**30:.2f} GiB",
                  flush=True)
            row.update(engine(out, queries_path, args.raw_seconds))
            row["estimate"] = estimate(out)
            row.update(serve(out, queries_path, args.requests))
            print(f"# {backend} {n:,}: {row['server_qps']:.0f} q/s at c=16", flush=True)
            measured.append(row)
        table += measured
        if len(measured) > 1 and args.target:
            table.append(extrapolate(measured, args.target, args.shard_size, exponent))
    notes = [f"--shard-size {args.shard_size:,} passages; requests of 3 distinct queries, topk 3, server cache off; "
             f"load average at the end {os.getloadavg()[0]:.1f}", *ASSUMPTIONS]
    if args.target and any(len(sizes) == 1 for _, sizes, _, _ in plans):
        notes.append("a backend measured at one size only is not extrapolated (that needs two sizes)")
    print_table(table, notes)
    if args.clean:
        shutil.rmtree(cache)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "engine":
        parser = argparse.ArgumentParser(prog="bench_retrieval_scale.py engine")
        parser.add_argument("--index", required=True)
        parser.add_argument("--queries-file", required=True)
        parser.add_argument("--seconds", type=float, default=10.0)
        _engine_main(parser.parse_args(sys.argv[2:]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", default="1000000,5000000", help="bm25s sizes, comma-separated ('' skips)")
    parser.add_argument("--dense-passages", default="1000000,5000000", help="dense ivfpq sizes ('' skips)")
    parser.add_argument("--shard-size", type=int, default=1_000_000, help="passages per shard")
    parser.add_argument("--target", type=int, default=21_000_000, help="extrapolate to this many passages (0: no)")
    parser.add_argument("--requests", type=int, default=1000, help="requests at concurrency 16")
    parser.add_argument("--raw-seconds", type=float, default=10.0)
    parser.add_argument("--cache-dir", default=str(DEFAULT_CACHE))
    parser.add_argument("--clean", action="store_true", help="delete the cache folder at the end")
    bench(parser.parse_args())


if __name__ == "__main__":
    main()
