"""Headless Chromium for the tests that open our HTML reports in a real browser (tests/viewer/test_chromium.py,
tests/gui/test_screenspot_chromium.py): `needs_chromium` skips a module where it is not installed; `dump_dom` and
`screenshot` run it once each, with a fresh profile, and assert that it exited cleanly."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = next((path for path in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
                 if path and Path(path).exists()), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless browser check needs Chromium at "
                                    "/usr/bin/chromium (apt-get install -y chromium); not installed here")


def _run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def dump_dom(tmp_path: Path, page: Path, query: str = "") -> str:
    """The DOM of the local `page` opened with the URL `query`, after its scripts ran."""
    return _run_chromium(tmp_path, "--dump-dom", page.as_uri() + query).stdout


def screenshot(tmp_path: Path, page: Path, width: int, height: int) -> Path:
    """A PNG of the local `page` in a `width` x `height` window."""
    shot = tmp_path / f"{page.stem}.png"
    _run_chromium(tmp_path, f"--window-size={width},{height}", f"--screenshot={shot}", page.as_uri())
    return shot
