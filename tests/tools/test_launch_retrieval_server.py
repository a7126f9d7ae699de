"""scripts/launch_retrieval_server.sh: waits for /health, runs the command with RETRIEVAL_URL, stops the server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentic_verl.net import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "launch_retrieval_server.sh"
CLI = Path(sys.executable).parent / "agentic-verl"


@pytest.mark.skipif(not CLI.exists(), reason="the agentic-verl entry point is not installed next to this python")
def test_launcher_serves_around_a_command_and_cleans_up(tiny_index_dir, tmp_path):
    port = free_port()
    probe = ("import os, httpx; url = os.environ['RETRIEVAL_URL']; "
             "r = httpx.post(url + '/retrieve', json={'queries': ['who wrote hamlet'], 'topk': 1}, trust_env=False); "
             "print('TOP', r.json()['result'][0][0]['id'])")
    env = {**os.environ, "INDEX_DIR": str(tiny_index_dir), "PORT": str(port), "AGENTIC_VERL": str(CLI),
           "LOG_FILE": str(tmp_path / "server.log")}
    proc = subprocess.run(["bash", str(SCRIPT), sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert f"retrieval server ready on http://127.0.0.1:{port}" in proc.stdout
    assert "TOP hamlet" in proc.stdout
    with pytest.raises(httpx.ConnectError):  # the EXIT trap stopped the server
        httpx.get(f"http://127.0.0.1:{port}/health", trust_env=False, timeout=2)


def test_launcher_without_an_index_fails_with_a_message(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("INDEX_DIR", "EXTRA_ARGS")}
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert proc.returncode == 2 and "set INDEX_DIR" in proc.stderr
