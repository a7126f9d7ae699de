"""`serve retrieval --replicas 2` on a local Ray cluster it starts: a replica killed (ray.kill) under load costs no
request, is replaced, and the server leaves no Ray process and nothing in the home folder behind."""

from __future__ import annotations

import asyncio
import itertools
import shutil
import signal
import tempfile
import time

import httpx
import pytest

from agentic_verl.cpu.cleanup import processes_mentioning, stop_processes
from agentic_verl.retrieval.auth import TOKEN_ENV
from agentic_verl.retrieval.backends.bm25s_backend import SCORER_ENV
from agentic_verl.retrieval.client import RetrievalClient
from agentic_verl.retrieval.replicas import NAMESPACE, ReplicaPool
from agentic_verl.retrieval.server import ServerProcess

pytestmark = pytest.mark.slow  # a Ray cluster: ~30-55 s on 2 busy cores

TOKEN = "replica-token-0123456789abcdef"
QUERIES = [
    ("who wrote hamlet", "hamlet"),
    ("capital of france", "paris"),
    ("Everest Himalayas", "everest"),
    ("Marie Curie radioactivity", "curie"),
    ("Nile river Africa", "nile"),
]


def get(server, path: str) -> dict:
    response = httpx.get(server.url + path, headers={"authorization": f"Bearer {TOKEN}"}, timeout=30, trust_env=False)
    assert response.status_code == 200, response.text
    return response.json()


async def load(url: str, total: int, concurrency: int, kill_after: int, kill) -> list[bool]:
    """`total` single-query requests from `concurrency` workers; `kill()` once `kill_after` are answered.
    Each answer: whether the expected passage came first (a failed request raises and fails the test)."""
    client = RetrievalClient(url, max_retries=2, backoff_s=0.2, timeout_s=30)
    numbers, answers = itertools.count(), []

    async def worker():
        while (i := next(numbers)) < total:
            query, expected = QUERIES[i % len(QUERIES)]
            [passages] = await client.retrieve([query], topk=1)
            answers.append(passages[0].id == expected)
            if len(answers) == kill_after:
                kill()

    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await client.aclose()
    return answers


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s}s: {what}")


def test_a_killed_replica_costs_no_request_and_is_replaced(tiny_index_dir, tmp_path, monkeypatch):
    import ray

    ray_dir = tempfile.mkdtemp(prefix="avray", dir="/tmp")  # Ray's socket paths must fit in 107 bytes
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # this process connects to the cluster too
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv(TOKEN_ENV, TOKEN)  # our client sends it
    args = ["--index", str(tiny_index_dir), "--ray-temp-dir", ray_dir, "--cache-size", "0"]
    args += "--replicas 2 --replica-cpus 0.5".split()
    # bm25s's numpy scorer: each replica (and the replacement) would otherwise compile the numba kernels (~10 s
    # of CPU each); scoring is not what this test is about (tests/retrieval/backends/test_bm25s_scorer.py)
    server = ServerProcess(
        args,
        log_path=tmp_path / "server.log",
        startup_timeout_s=240,
        env={TOKEN_ENV: TOKEN, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0", SCORER_ENV: "numpy"},
    )
    try:
        with server:
            replicas = get(server, "/health")["replicas"]
            assert replicas["ready"] == 2 and replicas["num_cpus"] == 0.5
            assert len({actor["pid"] for actor in replicas["actors"]}) == 2  # two processes
            victim = replicas["actors"][0]["name"]

            ray.init(address=replicas["ray_address"], namespace=NAMESPACE, log_to_driver=False)
            try:
                with pytest.raises(ValueError, match=r"2 replica\(s\) x 1000 GPU need 2000 GPU, but the Ray cluster"):
                    ReplicaPool(index_dir=str(tiny_index_dir), replicas=2, num_gpus=1000)  # refused before any actor

                def kill():
                    ray.kill(ray.get_actor(victim, namespace=NAMESPACE))

                answers = asyncio.run(load(server.url, total=300, concurrency=8, kill_after=60, kill=kill))
            finally:
                ray.shutdown()
            assert len(answers) == 300 and all(answers)

            # the dead replica is replaced by a new actor (and was routed around meanwhile)
            def replaced():
                now = get(server, "/health")["replicas"]
                return now if now["ready"] == 2 and now["replaced"] >= 1 else None

            now = wait_for(replaced, 60, "two ready replicas again, one of them new")
            assert victim not in [actor["name"] for actor in now["actors"]]
            metrics = get(server, "/metrics")
            assert metrics["requests"]["by_status"] == {"200": 300}  # not even the front answered an error
            assert metrics["replicas_replaced"] >= 1
            assert metrics["replica_retries"] >= 1  # requests that met the dead replica went to the other one
            [passages] = asyncio.run(RetrievalClient(server.url).retrieve(["capital of france"], topk=1))
            assert passages[0].id == "paris"
        # SIGTERM: uvicorn stops, the actors are killed, Ray shuts down, then uvicorn re-raises the signal (Ray's
        # handler makes that exit code 15); what matters is that it was not killed for ignoring it
        assert server.process.returncode == signal.SIGTERM
        # the local Ray started by the server is gone with it
        wait_for(lambda: not processes_mentioning(ray_dir), 30, f"no process left in {ray_dir}")
        assert not list(home.iterdir())  # Ray wrote nothing to the home folder
    finally:
        stop_processes(processes_mentioning(ray_dir))
        shutil.rmtree(ray_dir, ignore_errors=True)
