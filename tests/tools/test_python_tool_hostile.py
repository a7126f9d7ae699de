"""Hostile code and hostile arguments against PythonTool in the real sandbox, one test per case: each is contained,
comes back as an observation, is counted with its kind, and the tool (and this process) go on working."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.tools.code import PythonTool

STATUSES = {"ok", "error", "timeout", "killed", "bad_arguments", "sandbox_error"}


def call(tool: PythonTool, parameters) -> tuple[str, dict]:
    async def go():
        instance_id, _ = await tool.create()
        response, _, metrics = await tool.execute(instance_id, parameters)
        await tool.release(instance_id)
        return response.text, metrics

    return asyncio.run(go())


@pytest.fixture(scope="module")
def tool() -> PythonTool:
    return PythonTool({"type": "native", "allow_code_execution": True, "timeout_s": 8, "memory_mb": 512,
                       "max_output_chars": 500})


def contained(tool: PythonTool, code: str, status: str) -> str:
    """Run hostile `code`; it must end with `status`, counted; then the tool must still run a plain cell."""
    before = tool.failure_counts[status]
    text, metrics = call(tool, {"code": code})
    assert metrics["status"] == status, text
    assert tool.failure_counts[status] == before + 1 and metrics["failure_counts"][status] == before + 1
    alive, metrics = call(tool, {"code": "print('alive')"})
    assert alive == "alive" and metrics["status"] == "ok"
    return text


def test_fork_bomb(tool):
    text = contained(tool, "import os\nwhile True:\n    os.fork()", "error")
    assert text.endswith("BlockingIOError: [Errno 11] Resource temporarily unavailable")  # the process limit


def test_memory_hog(tool):
    text = contained(tool, "hog = []\nwhile True:\n    hog.append(bytearray(50 << 20))", "error")
    assert text.endswith("MemoryError")  # the 512 MiB address-space limit


def test_infinite_loop_times_out():
    quick = PythonTool({"type": "native", "allow_code_execution": True, "timeout_s": 1.5})
    text = contained(quick, "print('spinning', flush=True)\nwhile True:\n    pass", "timeout")
    assert text.startswith("[timeout] the code ran past 1.5 s") and text.endswith("stopped:\nspinning")


def test_network_connect_to_a_local_listener(tool):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)\nprint('connected')"
        text = contained(tool, code, "error")
        with pytest.raises(BlockingIOError):  # nobody reached the listener
            listener.accept()
    assert "connected" not in text and ("Network is unreachable" in text or "Cannot assign" in text), text


def test_reading_etc_passwd(tool):
    text = contained(tool, "print(open('/etc/passwd').read())", "error")
    assert text.endswith("FileNotFoundError: [Errno 2] No such file or directory: '/etc/passwd'")
    assert "root:" not in text


def test_writing_outside_its_folder(tool, tmp_path):
    target = tmp_path / "escaped.txt"
    code = (f"for path in ['/usr/escaped.txt', {str(target)!r}, '/escaped.txt']:\n"
            "    try:\n        open(path, 'w').write('x')\n        print('wrote', path)\n"
            "    except OSError as e:\n        print(type(e).__name__)\n"
            "open('mine.txt', 'w').write('ok')\nprint(open('mine.txt').read())\nopen('/usr/escaped.txt', 'w')")
    text = contained(tool, code, "error")
    assert "wrote" not in text and not target.exists() and not os.path.exists("/usr/escaped.txt")
    assert text.startswith("OSError\nFileNotFoundError\nOSError\nok\n")  # read-only /usr and root; its own folder works
    assert text.endswith("OSError: [Errno 30] Read-only file system: '/usr/escaped.txt'")


def test_signalling_its_parent(tool):
    me = os.getpid()
    text = contained(tool, "import os, signal\nprint(os.getppid())\nos.kill(os.getppid(), signal.SIGKILL)", "error")
    assert text.startswith("1\n")  # its parent is the namespace's init, not this process nor the launcher
    assert text.endswith("PermissionError: [Errno 1] Operation not permitted")
    text = contained(tool, f"import os, signal\nos.kill({me}, signal.SIGKILL)", "error")  # this process: not visible
    assert text.endswith("ProcessLookupError: [Errno 3] No such process") and os.getpid() == me


def test_killing_pid_1_in_its_namespace(tool):
    text = contained(tool, "import os, signal\nos.kill(1, signal.SIGKILL)", "error")
    assert text.endswith("PermissionError: [Errno 1] Operation not permitted")


def test_killing_itself_is_counted_as_killed(tool):
    text = contained(tool, "import os, signal\nprint('bye', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)",
                     "killed")
    assert text.startswith("[killed] the code ended before it finished") and text.endswith("ended:\nbye")


def test_huge_output(tool):
    before = tool.failure_counts["output_truncated"]
    text, metrics = call(tool, {"code": "import sys\nprint('x' * 50_000_000)\nsys.stderr.write('e' * 10**6)"})
    assert metrics["status"] == "ok" and metrics["output_truncated"] is True
    assert tool.failure_counts["output_truncated"] == before + 1
    assert "[output truncated: first 500 of 50000001 characters shown]" in text
    assert "[output truncated: first 500 of 1000000 characters shown]" in text and len(text) < 1300


_TEXT = st.text(max_size=40)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                     max_leaves=8)
HOSTILE_ARGUMENTS = st.one_of(
    _JSON,  # not a dict (or a dict without code)
    st.fixed_dictionaries({"code": _JSON.filter(lambda v: not isinstance(v, str))}),  # code not a string
    st.fixed_dictionaries({"code": st.sampled_from(["", "   \n", "x" * 20_001, "print(1)\n" * 5000])}),  # empty/huge
    st.fixed_dictionaries({"code": st.text(max_size=60)}),  # any text, surrogates and NULs included
    st.fixed_dictionaries({"code": st.sampled_from(["\ud800", "print('\\udfff')", "\x00", "print('\x1b[2J')"]),
                           "extra": _JSON}),
)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(parameters=HOSTILE_ARGUMENTS)
def test_hostile_arguments_never_raise(tool, parameters):
    text, metrics = call(tool, parameters)
    assert isinstance(text, str) and text and metrics["status"] in STATUSES
    if not isinstance(parameters, dict) or not isinstance(parameters.get("code"), str):
        assert metrics["status"] == "bad_arguments" and text.startswith("Python error (bad arguments)")
    assert metrics["status"] not in ("sandbox_error", "killed", "timeout"), text


def test_hostile_arguments_are_counted(tool):
    before = tool.failure_counts["bad_arguments"]
    for parameters in (None, [], "print(1)", {"code": 7}, {"code": ""}, {"code": "x" * 30_000}, {"cmd": "ls"}):
        text, metrics = call(tool, parameters)
        assert metrics["status"] == "bad_arguments", (parameters, text)
    assert tool.failure_counts["bad_arguments"] == before + 7


def test_a_sandbox_that_cannot_start_is_an_observation_not_an_exception():
    broken = PythonTool({"type": "native", "allow_code_execution": True, "timeout_s": 5})
    # a real sandbox whose setup fails: a read-only bind of a folder that does not exist
    broken.plan = dataclasses.replace(broken.plan, read_only=(*broken.plan.read_only, "/nonexistent/agentic_verl"))
    text, metrics = call(broken, {"code": "print(1)"})
    assert metrics["status"] == "sandbox_error" and broken.failure_counts["sandbox_error"] == 1
    assert text.startswith("[sandbox error] the code could not be run: sandbox_error") and "setup-error" in text
