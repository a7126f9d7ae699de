"""SIGTERM to a recipe's or a demo's shell (what a scheduler or `kill PID` sends) stops what that shell started.

bash ends on SIGTERM and runs its EXIT trap at once, while the command it was waiting for keeps running, orphaned;
recipes/_common/proc.sh's kill_descendants, called by every recipe's trap (device.sh: on a GPU alone, on the CPU
first, before Ray's and /dev/shm's cleanup) and by the demos' cleanup (demo.sh), ends it. Here the waited-for command is a stand-in whose own child (the "trainer") names a unique
marker and nothing of the run, so only kill_descendants can find it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _running(marker: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def _start_then_terminate(command: list[str], env: dict, marker: str, log: Path) -> tuple[int, list[int]]:
    """Start `command`, SIGTERM its shell once the stand-in runs; -> (exit code, PIDs of the stand-in's child still
    alive 15 s later)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _running(marker):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"the stand-in never started:\n{log.read_text()}"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # the shell only, as `kill PID` does
        returncode = proc.wait(timeout=60)
        deadline = time.monotonic() + 15
        while _running(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        return returncode, _running(marker)
    finally:
        for pid in _running(marker):  # never leave the stand-in behind, whatever the test found
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _stand_in(bin_dir: Path, marker: str) -> None:
    """A `python3` on PATH that starts a long-running child naming only `marker`, and waits for it."""
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(
        f"#!/usr/bin/env bash\n{sys.executable} -c 'import time; time.sleep(300)' {marker} &\nwait\n")
    (bin_dir / "python3").chmod(0o755)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_sigterm_to_a_recipe_stops_the_command_it_was_running(tmp_path, device):
    marker = f"agentic_verl_trainer_{uuid.uuid4().hex}"
    _stand_in(tmp_path / "bin", marker)
    env = {**os.environ, "AGENTIC_VERL_DEVICE": device, "MODEL_PATH": "/m", "CPU_RAY_TMPDIR": str(tmp_path / "ray"),
           "PATH": os.pathsep.join([str(tmp_path / "bin"), os.path.dirname(sys.executable), os.environ["PATH"]])}
    returncode, survivors = _start_then_terminate(["bash", "recipes/rag_r1/grpo.sh"], env, marker,
                                                  tmp_path / "log.txt")
    assert returncode != 0
    assert survivors == [], "the recipe's command outlived the SIGTERM"


def test_sigterm_to_a_demo_stops_the_stage_it_was_running(tmp_path):
    marker = f"agentic_verl_stage_{uuid.uuid4().hex}"
    _stand_in(tmp_path / "bin", marker)
    script = tmp_path / "demo.sh"
    script.write_text(f"""set -euo pipefail
ROOT={REPO}
source recipes/_common/demo.sh
demo_env sigterm_test
export PATH={tmp_path / 'bin'}:$PATH
demo_begin 1
stage 1 "a stage that runs until it is stopped"
run_logged {tmp_path / 'stage.log'} cat -- python3
""")
    returncode, survivors = _start_then_terminate(["bash", str(script)], dict(os.environ), marker,
                                                  tmp_path / "log.txt")
    assert returncode != 0
    assert survivors == [], "the demo's stage outlived the SIGTERM"
