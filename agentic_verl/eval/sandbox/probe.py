"""Find out, once per process, which isolation the sandbox gets here (`isolation()`), by running a probe program.

Full isolation needs the kernel to let us create mount, pid, network, IPC and UTS namespaces and to switch to an
unused uid: root (CAP_SYS_ADMIN, CAP_SETUID) in the host's user namespace, as in a container run as root. Where
that fails, `isolation()` raises SandboxUnavailable with the kernel's reason unless reduced isolation was allowed
explicitly; the reduced plan says what is missing, loudly, in `describe()`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

from agentic_verl.eval.sandbox.plan import Isolation, Limits, SandboxUnavailable
from agentic_verl.eval.sandbox.runner import run_with

FULL = ("mount namespace: / is a read-only tmpfs with read-only binds of the Python installation and /usr, four /dev "
        "nodes and /etc/ld.so.cache; /program and /tmp are private tmpfs, gone with the run",
        "pid namespace (the program cannot see or signal any process outside it; all of it dies with the run)",
        "network namespace (loopback only, down: no connection anywhere, 127.0.0.1 included)",
        "IPC and UTS namespaces", "a uid of its own per run, no capabilities, no_new_privs, not dumpable",
        "rlimits on CPU, address space, file size, processes", "wall-clock timeout",
        "pass only on the run's nonce from the launcher after the tests returned")
REDUCED = ("runs as the calling user: reads every file and signals every process that user can",
           "network, pid, /tmp shared with this machine", "rlimits on CPU, address space, file size",
           "wall-clock timeout (process group killed; a program that calls setsid escapes it)",
           "pass only on the run's nonce from the launcher after the tests returned")
# reads the probe's view from the inside: who it runs as and what it can reach
_PROBE = """\
import os, socket
assert os.getuid() != 0 and os.getpid() == 2, (os.getuid(), os.getpid())
assert not os.path.exists("/etc/passwd") and not os.path.exists("/proc/self")
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
except OSError as e:
    assert e.errno in (101, 99), e
"""


@functools.cache
def isolation(allow_reduced: bool = False) -> Isolation:
    """This process's sandbox plan, probed once. Raises SandboxUnavailable when the full sandbox cannot run here,
    unless `allow_reduced` (then the plan's `describe()` starts with `REDUCED (why)`)."""
    full = detect_isolation()
    if full.full:
        return full
    if not allow_reduced:
        raise SandboxUnavailable(
            f"the code sandbox cannot isolate programs here: {full.missing}. It needs root in the host's user "
            "namespace (e.g. a container run as root) to create mount, pid and network namespaces. Pass "
            "--allow-reduced-isolation (isolation(allow_reduced=True)) to run with reduced isolation: "
            + "; ".join(REDUCED))
    return full


def detect_isolation(namespaces: bool = True) -> Isolation:
    """Probe the full sandbox (`namespaces`) and fall back to a reduced plan when it cannot start; raises
    RuntimeError when even the reduced one cannot run a program (then nothing would)."""
    landlock = _landlock()
    if namespaces:
        plan = Isolation(True, FULL, landlock=landlock, read_only=_read_only_folders())
        probe = run_with(_PROBE, Limits(timeout_s=60), plan)
        if probe.status == "passed":
            return plan
        why = f"{probe.status}: {probe.output.strip()[-300:]}"
    else:
        why = "namespaces not requested"
    plan = Isolation(False, REDUCED, missing=why, landlock=landlock)
    probe = run_with("import os\n", Limits(timeout_s=60), plan)
    if probe.status != "passed":
        raise RuntimeError(f"the sandbox cannot run a program here ({why}); reduced: {probe.status}: "
                           f"{probe.output.strip()[-300:]}")
    return plan


def _read_only_folders() -> tuple[str, ...]:
    """The Python installation (the base interpreter's prefix and the virtual environment) and /usr, outermost
    first, without folders inside another."""
    folders = sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, "/usr")})
    kept: list[str] = []
    for folder in folders:
        if not any(folder.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(folder)
    return tuple(kept)


def _landlock() -> str:
    """The kernel's Landlock ABI version, as landlock_create_ruleset(NULL, 0, VERSION) reports it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(444, None, 0, 1)  # the same syscall number on every architecture
    except OSError as e:
        return f"unknown ({e})"
    if version < 0:
        return f"unavailable ({os.strerror(ctypes.get_errno())})"
    return f"ABI {version}, not used (the mount namespace already limits what the program sees)"
