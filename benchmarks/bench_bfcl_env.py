"""Load on the BFCL environment server as a rollout makes it: many trajectories at once, each opening a session of a
real BFCL question, making calls step by step, reading its state and closing it.

    .venv/bin/python benchmarks/bench_bfcl_env.py [--trajectories 512] [--concurrency 64 256] [--steps 6]

Per concurrency: requests/s, p50/p99 latency of /execute, and the checks that nothing was lost: every trajectory's
outputs and final state equal those of the same calls run alone, and the server holds no session afterwards.
The client is `BfclEnvClient` in this process (asyncio + aiohttp); the server runs in `.venv-bfcl`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "agreement"))

from _bfcl_mt_cases import load_entries  # noqa: E402

from agentic_verl.bfcl_env import BfclEnvClient, BfclEnvProcess  # noqa: E402
from agentic_verl.bfcl_env.venv import ensure_venv  # noqa: E402


def _steps(i: int, n_steps: int) -> list[list[dict]]:
    """Trajectory i's calls: its own folder and file in the question's file system, then listings."""
    steps = [[{"name": "cd", "arguments": {"folder": "document"}}],
             [{"name": "mkdir", "arguments": {"dir_name": f"run{i}"}}, {"name": "cd", "arguments": {"folder": f"run{i}"}}],
             [{"name": "echo", "arguments": {"content": f"trajectory {i}", "file_name": f"t{i}.txt"}}]]
    return (steps + [[{"name": "ls", "arguments": {}}, {"name": "pwd", "arguments": {}}]] * n_steps)[:n_steps]


async def _trajectory(client, entry, steps, latencies):
    sid = await client.create_session(initial_config=entry["initial_config"], involved_classes=entry["involved_classes"])
    outputs = []
    for step in steps:
        started = time.perf_counter()
        outputs.append(await client.execute(sid, step))
        latencies.append(time.perf_counter() - started)
    state = await client.state(sid)
    await client.close(sid)
    return outputs, state


async def _run(url: str, entry: dict, n: int, concurrency: int, n_steps: int) -> dict:
    client, gate, latencies = BfclEnvClient(url, max_concurrency=concurrency), asyncio.Semaphore(concurrency), []

    async def one(i):
        async with gate:
            return await _trajectory(client, entry, _steps(i, n_steps), latencies)

    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - started
    alone = [await _trajectory(client, entry, _steps(i, n_steps), []) for i in (0, n - 1)]
    assert [results[0], results[-1]] == alone, "a trajectory run among others differs from the same calls alone"
    for i, (_, state) in enumerate(results):
        folder = state["GorillaFileSystem"]["root"]["contents"]["document"]["contents"]
        assert sorted(k for k in folder if k.startswith("run")) == [f"run{i}"], f"trajectory {i} sees {sorted(folder)}"
    assert (await client.health())["sessions"] == 0, "sessions left open"
    await client.aclose()
    requests = n * (n_steps + 3)
    latencies.sort()
    return {"wall_s": wall, "requests_per_s": requests / wall, "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=int, default=512)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args(argv)
    ensure_venv()
    entry = load_entries("base", 1)[0]
    with BfclEnvProcess(["--max-sessions", str(max(args.concurrency) + 8)]) as server:
        print(f"{args.trajectories} trajectories of {entry['id']}, {args.steps} /execute each (+ create, state, close)")
        print("| concurrency | wall s | requests/s | /execute p50 ms | /execute p99 ms |")
        print("|---|---|---|---|---|")
        for concurrency in args.concurrency:
            r = asyncio.run(_run(server.url, entry, args.trajectories, concurrency, args.steps))
            print(f"| {concurrency} | {r['wall_s']:.1f} | {r['requests_per_s']:.0f} | {r['p50_ms']:.1f} | "
                  f"{r['p99_ms']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
