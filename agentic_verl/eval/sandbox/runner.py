"""Run one program under a plan (`Isolation`) and limits, and decide its status from the verdict pipe.

A program passes only when the launcher's main thread wrote the run's nonce to the result pipe, which it does only
after the program ran to its last statement (`boot.py`: the verdict protocol). The exit status never makes a pass.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agentic_verl.eval.sandbox.plan import Isolation, Limits

STATUSES = ("passed", "failed", "incomplete", "timeout", "cpu_limit", "memory_limit", "killed", "sandbox_error")
BOOT_SOURCE = (Path(__file__).parent / "boot.py").read_text(encoding="utf-8")
# the line of boot.py that the program thread stands on once the program returned (the verdict protocol)
DONE_LINE = next(i for i, line in enumerate(BOOT_SOURCE.splitlines(), 1) if "done.release(); hold.acquire()" in line)
_UID_FLOOR, _UID_SPAN = 1 << 20, 1 << 30  # each run's own uid: above every ordinary and container-mapped user


@dataclass(frozen=True)
class RunResult:
    status: str  # one of STATUSES
    returncode: int | None
    seconds: float
    output: str  # the tail of stderr (else stdout); for sandbox_error, the launcher's message


def run_with(source: str, limits: Limits, plan: Isolation) -> RunResult:
    workdir = tempfile.mkdtemp(prefix="agentic_verl_sandbox_")
    nonce = secrets.token_hex(16).encode()
    nonce_r, nonce_w = os.pipe()
    result_r, result_w = os.pipe()
    try:
        os.write(nonce_w, nonce)
        os.close(nonce_w)
        program = os.path.join(workdir, "program.py")
        with open(program, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(source)
        uid = _UID_FLOOR + secrets.randbelow(_UID_SPAN) if plan.namespaces else -1
        config = {"namespaces": plan.namespaces, "root": os.path.join(workdir, "root"), "program": program,
                  "read_only": list(plan.read_only), "uid": uid, "gid": uid, "cpu_s": limits.cpu_s,
                  "memory_bytes": limits.memory_mb << 20, "file_bytes": limits.file_mb << 20,
                  "tmpfs_bytes": (2 * limits.file_mb << 20) + os.path.getsize(program), "max_processes":
                  limits.max_processes, "nonce_fd": nonce_r, "result_fd": result_w, "done_line": DONE_LINE}
        os.mkdir(config["root"])
        home, tmp = ("/program", "/tmp") if plan.namespaces else (workdir, workdir)
        env = {"PATH": os.defpath, "HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        command = [sys.executable, "-I", "-B", "-c", BOOT_SOURCE, json.dumps(config)]
        # output goes to unnamed files, not pipes: a child the program leaves behind would hold a pipe open
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.monotonic()
            proc = subprocess.Popen(command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    pass_fds=(nonce_r, result_w), start_new_session=True)
            os.close(nonce_r)
            os.close(result_w)
            nonce_r = result_w = -1
            timed_out = False
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:  # the launcher and its namespace's init (pid 1: the namespace dies with it), whatever it forked
                _kill_group(proc.pid)
                proc.wait()
            seconds = time.monotonic() - started
            text = _tail(err, limits.output_chars) or _tail(out, limits.output_chars)
        verdict = _read_verdict(result_r)
    finally:
        for fd in (nonce_r, result_w, result_r):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(workdir, ignore_errors=True)
    if verdict.startswith(b"setup-error"):
        return RunResult("sandbox_error", proc.returncode, round(seconds, 3), verdict.decode("utf-8", "replace"))
    status = "passed" if verdict == nonce else _failure(verdict, proc.returncode, text, timed_out, plan.namespaces)
    return RunResult(status, proc.returncode, round(seconds, 3), text)


def _read_verdict(fd: int) -> bytes:
    """What the launcher's main thread wrote: the nonce, b"failed", a setup error, or nothing."""
    fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)  # every writer is gone; never wait on it anyway
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


def _failure(verdict: bytes, returncode: int | None, output: str, timed_out: bool, forwarded: bool) -> str:
    """How a program that did not pass ended. `forwarded`: the launcher reports a signal s as status 128 + s."""
    if timed_out:
        return "timeout"
    signum = -returncode if returncode is not None and returncode < 0 else 0
    if forwarded and returncode is not None and returncode > 128:
        signum = returncode - 128
    if "MemoryError" in output or "Cannot allocate memory" in output:
        return "memory_limit"
    if signum == signal.SIGXCPU:
        return "cpu_limit"
    if signum == signal.SIGKILL:
        return "killed"  # the hard CPU limit, or a kill
    return "failed" if verdict == b"failed" else "incomplete"


def _tail(f, chars: int) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - 4 * chars))
    return f.read().decode("utf-8", "replace")[-chars:]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
