"""BFCL's multi-turn questions from bfcl_eval's data, their ground truths as decoded calls, trajectories made from
them (the ground truth and mutations), and bfcl-eval's own executor/checker run directly in `.venv-bfcl`
(_bfcl_official_mt_runner.py). Shared by benchmarks/bfcl_env_agreement.py and tests/bfcl_env."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from agentic_verl.bfcl_env.protocol import keyword_call
from agentic_verl.bfcl_env.venv import ensure_venv

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
RUNNER = Path(__file__).resolve().parent / "_bfcl_official_mt_runner.py"


def _data():
    return resources.files("bfcl_eval") / "data"


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_entries(category: str, limit: int | None = None) -> list[dict]:
    """BFCL's multi_turn_<category> questions with their `ground_truth` (call strings per turn)."""
    name = f"BFCL_v4_multi_turn_{category}.json"
    answers = {e["id"]: e["ground_truth"] for e in _jsonl(_data() / "possible_answer" / name)}
    return [{**entry, "ground_truth": answers[entry["id"]]} for entry in _jsonl(_data() / name)[:limit]]


def parameter_order() -> dict[str, list[str]]:
    """{function: parameter names in doc order} over the multi-turn function docs."""
    order = {}
    for doc in (_data() / "multi_turn_func_doc").iterdir():
        for function in _jsonl(doc):
            order[function["name"]] = list(function["parameters"]["properties"])
    return order


ORDER = parameter_order()


def as_calls(strings: list[str]) -> list[dict]:
    return [keyword_call(text, ORDER) for text in strings]


def decoded(strings: list[list[list[str]]]) -> list[list[list[dict]]]:
    """Call strings [turn][step][call] as decoded calls."""
    return [[as_calls(step) for step in turn] for turn in strings]


def one_step_per_turn(turns: list[list[str]]) -> list[list[list[dict]]]:
    """A trajectory that makes each turn's calls in one step (no step for a turn without calls)."""
    return [[as_calls(turn)] if turn else [] for turn in turns]


def _write(call: dict) -> str:
    """A decoded call as the text a model would write (independent of the server's own rendering)."""
    return f"{call['name']}({', '.join(f'{k}={v!r}' for k, v in call['arguments'].items())})"


def mutations(gt: list[list[str]]) -> dict[str, list[list[list[str]]]]:
    """{kind: model call strings [turn][step][call]}: the ground truth ("gold") and ways of getting it wrong:
    the last call dropped, a string argument changed in the middle turn, the first turn left empty, and extra
    calls (an unknown name, a harmless `ls`) that should not change the verdict."""
    gold = [[list(turn)] if turn else [] for turn in gt]
    busy = [t for t, turn in enumerate(gt) if turn]
    cases = {"gold": gold}
    dropped = copy.deepcopy(gold)
    dropped[busy[-1]][0] = dropped[busy[-1]][0][:-1]
    dropped[busy[-1]] = [step for step in dropped[busy[-1]] if step]
    cases["drop_last_call"] = dropped
    changed = copy.deepcopy(gold)
    middle = busy[len(busy) // 2]
    for i, text in enumerate(changed[middle][0]):
        call = keyword_call(text, ORDER)
        strings = [k for k, v in call["arguments"].items() if isinstance(v, str)]
        if strings:
            call["arguments"][strings[0]] = "zz_changed"
            changed[middle][0][i] = _write(call)
            break
    cases["changed_argument"] = changed
    empty = copy.deepcopy(gold)
    empty[busy[0]] = []
    cases["empty_turn"] = empty
    extra = copy.deepcopy(gold)
    extra[busy[0]].append(["no_such_function(x=1)", "ls(a=True)"])
    cases["extra_calls"] = extra
    return cases


def all_cases(per_category: int | None = None) -> list[tuple[dict, str, list]]:
    """(entry, kind, model call strings) for the first `per_category` questions of each category (all: None)."""
    return [(entry, kind, strings) for category in CATEGORIES for entry in load_entries(category, per_category)
            for kind, strings in mutations(entry["ground_truth"]).items()]


def official(requests: list[dict]) -> list[dict]:
    """bfcl-eval's executor / checker run directly (see _bfcl_official_mt_runner.py), one answer per request."""
    python = ensure_venv()
    with tempfile.TemporaryDirectory() as project_root:  # bfcl-eval writes result/score folders there if ever
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run([str(python), str(RUNNER)], input="".join(json.dumps(r) + "\n" for r in requests),
                              capture_output=True, text=True, env={**env, "BFCL_PROJECT_ROOT": project_root},
                              check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the official multi-turn runner failed: {done.stderr[-3000:]}")
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(answers) != len(requests):
        raise RuntimeError(f"the official runner answered {len(answers)} of {len(requests)} requests")
    return answers


def official_checks(cases: list[tuple[dict, str, list]]) -> list[dict]:
    """bfcl-eval's multi_turn_checker's {"valid", "error_type"} for each case, run directly."""
    return official([{"op": "check", "model": strings, "gt": entry["ground_truth"],
                      "entry": {k: entry[k] for k in ("id", "initial_config", "involved_classes")}}
                     for entry, _, strings in cases])
