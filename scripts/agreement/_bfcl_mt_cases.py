"""BFCL's multi-turn questions from bfcl_eval's data, their ground truths as decoded calls, trajectories made from
them (the ground truth and mutations), bfcl-eval's own executor/checker run directly in `.venv-bfcl`
(_bfcl_official_mt_runner.py), and scripted policies for `eval bfcl` (`TurnScript`, an engine answering from
per-question scripts). Shared by scripts/agreement/bfcl_env_agreement.py, scripts/agreement/bfcl_mt_eval_agreement.py,
tests/bfcl_env and tests/eval."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
from pathlib import Path

from agentic_verl.bfcl_env.data import MULTI_TURN_CATEGORIES, multi_turn_entries, parameter_order
from agentic_verl.bfcl_env.protocol import keyword_call, render_call
from agentic_verl.bfcl_env.venv import ensure_venv

CATEGORIES = MULTI_TURN_CATEGORIES
RUNNER = Path(__file__).resolve().parent / "_bfcl_official_mt_runner.py"


def load_entries(category: str, limit: int | None = None) -> list[dict]:
    """BFCL's multi_turn_<category> questions with their `ground_truth` (call strings per turn)."""
    return multi_turn_entries([category], limit)


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


# -- scripted policies for `eval bfcl` -----------------------------------------------------------------
def calls_text(strings: list[str]) -> str:
    """Ground-truth call strings as one model step, `[f(a=1), g(b='x')]` (keyword arguments, as models write)."""
    return "[" + ", ".join(render_call(c["name"], c["arguments"]) for c in as_calls(strings)) + "]"


def gold(entry: dict) -> list[list[str]]:
    """Per turn, the steps of a policy that makes the turn's ground-truth calls, then answers."""
    return [[calls_text(turn), "Done."] if turn else ["There is nothing to call."] for turn in entry["ground_truth"]]


class TurnScript:
    """The engines' `generate`, answering each question (the first part of the request id, which the eval makes
    the question's id) with its script's steps in order (the turns' step lists, flattened), then "Done.".
    `cut`: questions whose step `at` ends at the token limit (no EOS); `fail`: questions the engine refuses."""

    def __init__(self, tokenizer, scripts: dict[str, list[list[str]]], cut: dict[str, int] | None = None,
                 fail: set[str] = frozenset()):
        self.tokenizer, self.cut, self.fail = tokenizer, dict(cut or {}), set(fail)
        self.scripts = {qid: [step for turn in turns for step in turn] for qid, turns in scripts.items()}
        self.asked: dict[str, int] = {}
        self.prompts: dict[str, list[str]] = {}

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        from agentic_verl.generation.hf_engine import GenerationOutput

        qid = str(request_id).split("/")[0]
        if qid in self.fail:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens leaves no room within max_model_len=64")
        step = self.asked.get(qid, 0)
        self.asked[qid] = step + 1
        self.prompts.setdefault(qid, []).append(self.tokenizer.decode(prompt_ids))
        script = self.scripts.get(qid, [])
        ids = self.tokenizer.encode(script[step] if step < len(script) else "Done.", add_special_tokens=False)
        if self.cut.get(qid) == step:
            return GenerationOutput(ids, None, "completed", "length")
        return GenerationOutput(ids + [self.tokenizer.eos_token_id], None, "completed", "stop")


def first_with_calls(turns: list[list[str]]) -> int:
    return next(i for i, turn in enumerate(turns) if turn)


def scripted_policies(questions: list[dict]) -> tuple[dict, dict, set]:
    """(scripts, cut, fail) for `TurnScript`, by the question's index modulo 4: gold; no call at all; gold but the
    calls spread over steps, with reasoning and an empty `[]` step ending a turn; a turn ended by a step that does
    not decode and a later one with its first call left out (miss_func), force-quit by 22 executed steps in its
    first turn (miss_param), cut at the token limit in its second turn (long_context), or refused by the engine
    (base)."""
    scripts, cut, fail = {}, {}, set()
    for q in questions:
        gt, index = q["entry"]["ground_truth"], int(q["id"].rsplit("_", 1)[1]) % 4
        turns = gold(q["entry"])
        if index == 1:
            turns = [["I would rather not call anything."] for _ in gt]
        elif index == 2:
            first = first_with_calls(gt)
            calls = gt[first]
            turns[first] = ["<think>one at a time</think>\n\n" + calls_text(calls[:1]),
                            *([calls_text(calls[1:])] if calls[1:] else []), "[]"]
        elif index == 3:
            if q["category"] == "multi_turn_miss_param":
                turns[0] = ["[ls()]"] * 22
            elif q["category"] == "multi_turn_long_context":
                cut[q["id"]] = len(turns[0])  # the first step of the second turn
            elif q["category"] == "multi_turn_base":
                fail.add(q["id"])
            else:
                with_calls = [i for i, turn in enumerate(gt) if turn]
                turns[with_calls[0]] = ["[cd(folder="]  # does not decode: the turn ends there
                last = gt[with_calls[-1]]
                turns[with_calls[-1]] = [calls_text(last[1:] or ["ls()"]), "Done."]  # the first call left out
        scripts[q["id"]] = turns
    return scripts, cut, fail
