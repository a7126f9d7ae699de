"""Start the BFCL environment server in `.venv-bfcl` and wait for its /health (the serve command, tests, recipes).

    with BfclEnvProcess() as server:              # 127.0.0.1:<free port>
        client = BfclEnvClient(server.url)

The server imports only the standard library, bfcl-eval and this package's standard-library modules, so the
venv gets just this package on its path (`venv.package_only_path`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from agentic_verl.bfcl_env.protocol import SERVER_NAME
from agentic_verl.bfcl_env.venv import package_only_path, require_python
from agentic_verl.net import free_port, start_server_process, stop_server_process


class BfclEnvProcess:
    """`python -m agentic_verl.bfcl_env.server ARGS --host HOST --port PORT` with `.venv-bfcl`'s python (or
    `python`); a context manager. `env` adds to this process's environment (e.g. the token variable); `log_path`
    gets the server's output (default: this process's stdout/stderr)."""

    def __init__(self, args: list[str] | tuple = (), *, host: str = "127.0.0.1", port: int | None = None,
                 startup_timeout_s: float = 60.0, log_path: str | Path | None = None,
                 env: dict[str, str] | None = None, python: str | Path | None = None):
        self.host, self.port = host, port or free_port()
        self.url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{self.port}"
        self.python = Path(python) if python else require_python()
        self._args, self._timeout, self._log_path = list(args), startup_timeout_s, log_path
        self._env = dict(env or {})
        self.process: subprocess.Popen | None = None
        self._path_dir: str | None = None

    @property
    def command(self) -> list[str]:
        return [str(self.python), "-m", "agentic_verl.bfcl_env.server", *self._args, "--host", self.host,
                "--port", str(self.port)]

    def start(self) -> BfclEnvProcess:
        self._path_dir = tempfile.mkdtemp(prefix="agentic_verl_bfcl_env_")
        env = {**os.environ, **self._env, **package_only_path(self._path_dir), "PYTHONUNBUFFERED": "1"}
        try:
            self.process = start_server_process(self.command, self.url, name=SERVER_NAME, timeout_s=self._timeout,
                                                env=env, log_path=self._log_path)
        except BaseException:  # it did not come up (and was stopped): its path folder goes too
            self._cleanup()
            raise
        return self

    def stop(self) -> None:
        stop_server_process(self.process)
        self._cleanup()

    def wait(self) -> int:
        """Block until the server exits; its exit code."""
        assert self.process is not None, "start() first"
        try:
            return self.process.wait()
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        if self._path_dir is not None:
            shutil.rmtree(self._path_dir, ignore_errors=True)
            self._path_dir = None

    def __enter__(self) -> BfclEnvProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
