"""The BFCL environment server the tests share (started once, in `.venv-bfcl`, on a free loopback port)."""

from __future__ import annotations

import pytest

from agentic_verl.bfcl_env.venv import available, ensure_venv


@pytest.fixture(scope="session", autouse=True)
def _current_venv():
    """A venv made for an older package list (before mpmath) gets what it lacks, as `make bfcl-venv` would."""
    if available():
        ensure_venv()


@pytest.fixture(scope="session")
def bfcl_env(tmp_path_factory):
    if not available():
        pytest.skip("no .venv-bfcl (run `make bfcl-venv`)")
    from agentic_verl.bfcl_env.process import BfclEnvProcess

    log = tmp_path_factory.mktemp("bfcl_env") / "server.log"
    with BfclEnvProcess(log_path=log) as server:
        yield server
    assert server.process.returncode == 0, log.read_text()[-3000:]  # a clean stop, no traceback on the way
