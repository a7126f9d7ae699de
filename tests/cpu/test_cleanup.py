"""What the CPU switch's exit trap removes (agentic_verl/cpu/cleanup.py): the run's processes and the /dev/shm
segments it left that nothing maps, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from multiprocessing import shared_memory

from agentic_verl.cpu.cleanup import (
    SHM_DIR,
    cleanup_after_run,
    processes_mentioning,
    stop_processes,
    write_snapshot,
)


def _segment(name: str) -> shared_memory.SharedMemory:
    return shared_memory.SharedMemory(name=name, create=True, size=4096)


def test_processes_are_found_by_command_line_or_an_open_file_and_stopped(tmp_path):
    folder = tmp_path / "ray_session"
    folder.mkdir()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    by_cmdline = subprocess.Popen([*sleeper, str(folder)])
    # renamed Ray processes (ray::DashboardAgent) only keep their logs open in the session folder
    by_open_file = subprocess.Popen(["bash", "-c", f"exec 3>'{folder}/agent.log'; exec sleep 60"])
    bystander = subprocess.Popen([*sleeper, f"{folder}_other"])
    time.sleep(0.5)
    try:
        found = processes_mentioning(str(folder))
        assert by_cmdline.pid in found and by_open_file.pid in found
        assert bystander.pid not in found  # a folder whose name merely starts the same is someone else's
        stop_processes(found, grace_s=5)
        assert by_cmdline.wait(timeout=10) is not None and by_open_file.wait(timeout=10) is not None
        assert bystander.poll() is None
    finally:
        for proc in (by_cmdline, by_open_file, bystander):
            proc.kill()


def test_only_new_unmapped_segments_are_removed(tmp_path):
    tag = uuid.uuid4().hex[:8]
    older = _segment(f"psm_{tag}_old")  # existed before the run: never touched
    snapshot = tmp_path / "shm.txt"
    write_snapshot(snapshot)
    orphan = _segment(f"psm_{tag}_orphan")
    orphan.close()  # created during the run, no longer mapped by anyone: the leftover to remove
    # created during the run but still mapped by a live process (another run's engine): kept
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from multiprocessing import shared_memory as s; "
        f"m = s.SharedMemory(name='verl_weights_{tag}', create=True, size=4096); print('ready', flush=True); "
        "time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        removed = cleanup_after_run(shm_snapshot=snapshot)
        assert f"psm_{tag}_orphan" in removed
        assert (SHM_DIR / f"psm_{tag}_old").exists()
        assert (SHM_DIR / f"verl_weights_{tag}").exists()
        assert not (SHM_DIR / f"psm_{tag}_orphan").exists()
    finally:
        holder.kill()
        holder.wait()
        older.close()
        for name in (f"psm_{tag}_old", f"psm_{tag}_orphan", f"verl_weights_{tag}"):
            if (SHM_DIR / name).exists():
                os.unlink(SHM_DIR / name)


def test_cli_needs_something_to_do():
    proc = subprocess.run([sys.executable, "-m", "agentic_verl.cli", "cpu-cleanup"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "cpu-cleanup needs --snapshot F" in proc.stderr
