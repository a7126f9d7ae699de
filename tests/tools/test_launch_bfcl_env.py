"""scripts/launch_bfcl_env.sh: waits for /health, runs the command with BFCL_ENV_URL, stops the server (both the
`serve bfcl-env` process and its server in .venv-bfcl)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentic_verl.bfcl_env.venv import available, ensure_venv
from agentic_verl.net import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "launch_bfcl_env.sh"
CLI = Path(sys.executable).parent / "agentic-verl"


@pytest.mark.bfcl_official
@pytest.mark.skipif(not available(), reason="no .venv-bfcl (run `make bfcl-venv`)")
@pytest.mark.skipif(not CLI.exists(), reason="the agentic-verl entry point is not installed next to this python")
def test_launcher_serves_around_a_command_and_cleans_up(tmp_path):
    ensure_venv()  # a venv made for an older package list gets what it lacks (`make bfcl-venv`)
    port = free_port()
    probe = ("import asyncio, os; from agentic_verl.bfcl_env import BfclEnvClient\n"
             "async def main():\n"
             "    client = BfclEnvClient(os.environ['BFCL_ENV_URL'])\n"
             "    sid = await client.create_session(initial_config={}, involved_classes=['MathAPI'])\n"
             "    print('OUT', await client.execute(sid, [{'name': 'add', 'arguments': {'a': 2, 'b': 3}}]))\n"
             "    await client.aclose()\n"
             "asyncio.run(main())")
    env = {**os.environ, "PORT": str(port), "AGENTIC_VERL": str(CLI), "LOG_FILE": str(tmp_path / "server.log")}
    proc = subprocess.run(["bash", str(SCRIPT), sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + (tmp_path / "server.log").read_text()
    assert f"BFCL environment server ready on http://127.0.0.1:{port}" in proc.stdout
    assert "OUT ['{\"result\": 5}']" in proc.stdout
    with pytest.raises(httpx.ConnectError):  # the EXIT trap stopped the server in .venv-bfcl too
        httpx.get(f"http://127.0.0.1:{port}/health", trust_env=False, timeout=2)


@pytest.mark.skipif(not CLI.exists(), reason="the agentic-verl entry point is not installed next to this python")
def test_launcher_with_a_missing_venv_fails_with_a_message(tmp_path):
    env = {**os.environ, "BFCL_OFFICIAL_VENV": str(tmp_path / "none"), "AGENTIC_VERL": str(CLI),
           "PORT": str(free_port()), "LOG_FILE": str(tmp_path / "server.log")}
    proc = subprocess.run(["bash", str(SCRIPT), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "did not come up" in proc.stderr
    assert "make bfcl-venv" in proc.stderr  # the log's last lines say why
