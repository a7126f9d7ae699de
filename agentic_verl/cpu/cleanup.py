"""Leave nothing behind after a CPU run: Ray processes of the run's session folder and orphaned shared memory.

vLLM's message queues (`/dev/shm/psm_*`, ~420 MB per run on CPU) and verl's weight-transfer buckets
(`/dev/shm/verl_weights_*`) outlive processes that are killed rather than shut down, and Ray's processes of a
run are found by the session folder on their command lines. `recipes/_common/device.sh` runs
`agentic-verl cpu-cleanup --snapshot F` at start and `agentic-verl cpu-cleanup --ray-dir DIR --shm-snapshot F`
at exit (commands/cpu_cleanup.py); the CPU tests call `cleanup_after_run` too.

Only segments that did not exist at the snapshot and that no live process still maps are removed, so a run
never touches another run's segments.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

SHM_DIR = Path("/dev/shm")
SHM_PREFIXES = ("psm_", "verl_weights_")


def shm_segments(prefixes: tuple[str, ...] = SHM_PREFIXES) -> set[str]:
    """Names of the shared-memory segments a vLLM/verl run creates."""
    if not SHM_DIR.is_dir():
        return set()
    return {entry.name for entry in SHM_DIR.iterdir() if entry.name.startswith(prefixes)}


def mapped_segments() -> set[str]:
    """Segments some live process still has mapped (read from /proc/<pid>/maps)."""
    mapped = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text(errors="replace")
        except OSError:  # the process ended, or is not ours to read
            continue
        for line in text.splitlines():
            if " /dev/shm/" in line:
                mapped.add(line.rsplit("/dev/shm/", 1)[1].split(" ")[0])
    return mapped


def remove_orphaned_segments(before: set[str]) -> list[str]:
    """Remove segments created since `before` that no process maps any more; return their names."""
    in_use = mapped_segments()
    removed = []
    for name in sorted(shm_segments() - before - in_use):
        try:
            (SHM_DIR / name).unlink()
            removed.append(name)
        except FileNotFoundError:
            pass
    return removed


def processes_mentioning(text: str) -> list[int]:
    """PIDs (other than ours) whose command line names the folder `text`, or that hold a file open in it: Ray's
    processes name their session folder on the command line, but the ones that rename themselves
    (`ray::DashboardAgent`, ...) only keep their log files there open."""
    pids, folder = [], text.rstrip("/") + "/"
    for proc in Path("/proc").glob("[0-9]*"):
        pid = int(proc.name)
        if pid == os.getpid():
            continue
        try:
            args = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if any(_names_path(arg, folder) for arg in args):
                pids.append(pid)
                continue
            if any(os.readlink(fd).startswith(folder) for fd in (proc / "fd").iterdir()):
                pids.append(pid)
        except OSError:  # the process ended, or is not ours to read
            continue
    return pids


def _names_path(arg: str, folder: str) -> bool:
    """`arg` is the folder or a path inside it, alone or as a `--flag=value` (so `/tmp/x_other` is not `/tmp/x`)."""
    value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
    return value == folder.rstrip("/") or value.startswith(folder)


def stop_processes(pids: list[int], grace_s: float = 10.0) -> list[int]:
    """SIGTERM, then SIGKILL what is still alive after `grace_s`; return the PIDs that were still running."""
    alive = [pid for pid in pids if _signal(pid, signal.SIGTERM)]
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if _exists(pid)]
    for pid in alive:
        _signal(pid, signal.SIGKILL)
    return alive


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.split(") ", 1)[1][:1] != "Z"  # a zombie is gone, its parent just has not reaped it
    except (ProcessLookupError, PermissionError, OSError):
        return False


def write_snapshot(path: str | Path) -> None:
    Path(path).write_text("\n".join(sorted(shm_segments())))


def cleanup_after_run(ray_dir: str | None = None, shm_snapshot: str | Path | None = None) -> list[str]:
    """Stop the processes naming `ray_dir`, then remove segments not in the snapshot that nothing maps."""
    if ray_dir:
        stop_processes(processes_mentioning(ray_dir))
    if not shm_snapshot:
        return []
    snapshot = Path(shm_snapshot)
    before = set(snapshot.read_text().split()) if snapshot.exists() else set()
    removed = remove_orphaned_segments(before)
    if removed:
        print(f"agentic_verl cleanup: removed {len(removed)} orphaned /dev/shm segment(s)", file=sys.stderr)
    return removed
