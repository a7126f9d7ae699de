import os
import subprocess
import sys

from agentic_verl import SUPPORTED_VERL_VERSION
from agentic_verl.commands.doctor import check_verl_version


def _doctor(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "agentic_verl.cli", "doctor", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300,
    )


def test_doctor_passes_on_this_installation():
    proc = _doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"verl {SUPPORTED_VERL_VERSION}" in proc.stdout
    assert "plugin: loaded" in proc.stdout


def test_wrong_verl_version_fails_with_the_fix(tmp_path):
    # A stand-in `verl` package that shadows the real one, as an old install on PYTHONPATH would.
    fake = tmp_path / "verl"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "0.4.0"\n')
    repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = _doctor(env={"PYTHONPATH": f"{tmp_path}:{repo_root}"})
    assert proc.returncode == 1
    assert "verl 0.4.0 found" in proc.stdout
    assert f"verl[verl-core]=={SUPPORTED_VERL_VERSION}" in proc.stdout


def test_version_check_unit():
    assert check_verl_version(SUPPORTED_VERL_VERSION, "/x").ok
    assert not check_verl_version("0.9.0", "/x").ok


def test_disabled_plugin_is_reported():
    proc = _doctor(env={"VERL_USE_EXTERNAL_PLUGINS": "none"})
    assert proc.returncode == 1
    assert "did not load the agentic_verl plugin" in proc.stdout


def test_required_missing_extra_fails():
    proc = _doctor("--require", "no_such_extra")
    assert proc.returncode == 2
    assert "unknown extra" in proc.stderr
