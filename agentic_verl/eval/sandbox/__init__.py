"""Run untrusted Python (model-written code and its tests) in an isolated subprocess, never in-process.

    result = run_program("def f():\\n    return 1\\nassert f() == 1\\n", Limits(timeout_s=10))
    result.status   # passed | failed | incomplete | timeout | cpu_limit | memory_limit | killed | sandbox_error
    isolation().describe()   # 'full: mount namespace: ...; pid namespace ...': what the programs get here

**When a program passes.** Only on positive evidence that it ran to its last statement (for HumanEval,
`check(entry_point)`): the supervisor writes a fresh random nonce into a pipe before each run; inside, the program
runs in a thread whose file-descriptor table does not hold that pipe (nor the result pipe), and the launcher's main
thread copies the nonce to the result pipe only once the program's `exec` returned (`boot.py` docstring: the
verdict protocol). The nonce is never in the program's source, argv, environment or files. The exit status
never makes a pass: `sys.exit(0)`, `os._exit(0)`, atexit handlers, finalizers and signals end a run as `failed`
(an exception, SystemExit included) or `incomplete` (the process ended before the tests did).

**Isolation** (`isolation()` probes it once and says what it got; `boot.py` sets it up). Full, where the kernel lets
root create namespaces (this machine and containers run as root): mount, pid, network, IPC and UTS namespaces;
the program sees a read-only root with the Python installation and /usr only (no /etc/passwd, no /proc, no
project files), writes only its private /program and /tmp (tmpfs, gone with the run); runs as a uid of its own,
with no capabilities, no_new_privs, not dumpable; no network, 127.0.0.1 included; rlimits (CPU seconds, address
space, file size, processes of its uid) and a wall-clock timeout after which the launcher's process group is
killed (the namespace's init dies with it, and the kernel kills everything in the namespace). Where the full
sandbox cannot start, `isolation()` raises SandboxUnavailable; `isolation(allow_reduced=True)` runs with reduced
isolation (the calling user, shared network, pid and /tmp) and says so in every description.

Not covered: programs that game the tests themselves in the same interpreter (an object equal to everything, a
thread that replaces `check` between its definition and its call): the official harness passes those too.
"""

from __future__ import annotations

from agentic_verl.eval.sandbox.plan import CodeExecutionNotAllowed, Isolation, Limits, SandboxUnavailable
from agentic_verl.eval.sandbox.probe import detect_isolation, isolation
from agentic_verl.eval.sandbox.runner import STATUSES, RunResult, run_with

__all__ = ["STATUSES", "CodeExecutionNotAllowed", "Isolation", "Limits", "RunResult", "SandboxUnavailable",
           "detect_isolation", "isolation", "run_program"]


def run_program(source: str, limits: Limits | None = None, plan: Isolation | None = None) -> RunResult:
    """Run `source` as a script under `limits` and `plan` (default: `isolation()`, which refuses reduced isolation)
    and classify how it ended."""
    return run_with(source, limits or Limits(), plan or isolation())
