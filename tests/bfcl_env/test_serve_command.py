"""`agentic-verl serve bfcl-env` (the server in .venv-bfcl, the URL printed once /health answers, both processes
gone on SIGTERM) and `.venv-bfcl`'s location and package list (agentic_verl/bfcl_env/venv.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from agentic_verl.bfcl_env import venv
from agentic_verl.cli import main


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.bfcl_official
@pytest.mark.skipif(not venv.available(), reason="no .venv-bfcl (run `make bfcl-venv`)")
def test_serve_bfcl_env_prints_the_url_once_healthy_and_stops_its_server(stop_signal):
    command = [sys.executable, "-m", "agentic_verl.cli", "serve", "bfcl-env", "--port", "0", "--max-sessions", "7"]
    # pytest-xdist's workers ignore SIGINT and a child inherits that (Python then installs no KeyboardInterrupt
    # handler): give the command the default disposition a terminal's Ctrl-C meets
    parent = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = []
        while not any("ready on" in line for line in lines):
            line = parent.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        match = re.search(r"ready on (http://127\.0\.0\.1:\d+) \(pid (\d+),", lines[-1])
        url, server_pid = match.group(1), int(match.group(2))
        with urllib.request.urlopen(url + "/health", timeout=10) as response:
            health = json.loads(response.read())
        assert health["status"] == "ok" and health["limits"]["max_sessions"] == 7  # the flags reached the server
        parent.send_signal(stop_signal)
        parent.wait(timeout=20)
        deadline = time.monotonic() + 10
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_missing_venv_is_an_error_that_names_make_bfcl_venv(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(venv.VENV_ENV, str(tmp_path / "no-venv"))
    assert main(["serve", "bfcl-env"]) == 2
    err = capsys.readouterr().err
    assert "no bfcl-eval venv at" in err and "make bfcl-venv" in err


def test_ensure_venv_installs_what_the_package_list_adds_once(monkeypatch, tmp_path):
    folder = tmp_path / "venv"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")  # a venv made by an older checkout: no package list recorded
    monkeypatch.setenv(venv.VENV_ENV, str(folder))
    runs = []
    monkeypatch.setattr(venv.subprocess, "run", lambda command, check: runs.append(command))
    assert venv.ensure_venv() == folder / "bin" / "python"
    assert len(runs) == 1 and runs[0][-len(venv.PACKAGES):] == venv.PACKAGES and "--no-deps" in runs[0]
    assert "mpmath==1.3.0" in venv.PACKAGES  # MathAPI imports it
    venv.ensure_venv()
    assert len(runs) == 1  # recorded: nothing to install the second time
