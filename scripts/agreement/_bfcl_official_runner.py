"""Run BFCL's official decoder + AST checker over JSONL cases; runs inside `.venv-bfcl` (see bfcl_official.py).

stdin: one JSON object per line: {"output", "functions", "possible_answer", "category"}.
stdout: one JSON object per line: {"valid": bool, "error_type": str | None, "crashed": str | None}.
With `--score`, stdin holds model outputs {"id", "category", "result"} instead and stdout BFCL's accuracy per
category (questions and answers read by bfcl_eval itself); with `--prompts LIMIT CATEGORY...`, stdout holds
BFCL's chat messages for the first LIMIT questions of each category (multi-turn: turn 0's, and under "added" the
user message of each turn that adds withheld functions).
With `--bench N`, instead times the official decode + check and our ast_match (imported from this checkout, in
its default, official-compatible mode) over the same cases: a first pass, then N rounds, the two alternating,
and prints samples/s of each (per wall-clock and per CPU second) as JSON.

This mirrors bfcl_eval.eval_checker.eval_runner (_evaluate_single_ast_entry / _evaluate_single_relevance_entry)
for a prompting model, whose decode_ast is default_decode_ast_prompting. bfcl_eval.constants.model_config
imports every API client; it is replaced by a stub whose only use (convert_func_name) answers
"no underscore-to-dot renaming", which is the case for prompting models.
"""

import json
import sys
import time
import types
from pathlib import Path


class _NoRename:
    underscore_to_dot = False


class _AnyModel(dict):
    def __missing__(self, key):
        return _NoRename()


_stub = types.ModuleType("bfcl_eval.constants.model_config")
_stub.MODEL_CONFIG_MAPPING = _AnyModel()
sys.modules["bfcl_eval.constants.model_config"] = _stub

from bfcl_eval.constants.enums import Language, ReturnFormat  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402
from bfcl_eval.model_handler.utils import default_decode_ast_prompting  # noqa: E402
from bfcl_eval.utils import is_empty_output, is_function_calling_format_output, is_java, is_js  # noqa: E402

MODEL = "official-prompting-model"


def evaluate(case: dict) -> dict:
    output, category = case["output"], case["category"]
    if "relevance" in category:
        try:
            decoded = default_decode_ast_prompting(output, ReturnFormat.PYTHON, False)
            has_call = not is_empty_output(decoded)
        except Exception:
            has_call = False
        if "irrelevance" in category:
            return {"valid": not has_call, "error_type": "irrelevance_error:decoder_success" if has_call else None}
        return {"valid": has_call, "error_type": None if has_call else "relevance_error:decoder_failed"}
    if is_java(category):
        language, return_format = Language.JAVA, ReturnFormat.JAVA
    elif is_js(category):
        language, return_format = Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
    else:
        language, return_format = Language.PYTHON, ReturnFormat.PYTHON
    try:
        decoded = default_decode_ast_prompting(output, return_format, False)
    except Exception:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    result = ast_checker(case["functions"], decoded, case["possible_answer"], language, category, MODEL)
    return {"valid": bool(result["valid"]), "error_type": result.get("error_type") if not result["valid"] else None}


def safe_evaluate(case: dict) -> dict:
    try:
        return {**evaluate(case), "crashed": None}
    except Exception as exc:  # the official checker raised (bad schema or a value shape it does not expect)
        return {"valid": False, "error_type": None, "crashed": f"{type(exc).__name__}: {exc}"[:200]}


def _import_ours():
    """Our ast_match, imported here so both run in one process under the same load. agentic_verl's package
    __init__ files are bypassed (they import numpy and the other rewards); agentic_verl.rewards.bfcl needs
    only the standard library."""
    root = Path(__file__).resolve().parents[2]
    for name, path in (("agentic_verl", root / "agentic_verl"), ("agentic_verl.rewards", root / "agentic_verl" / "rewards")):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [str(path)]
            sys.modules[name] = module
    from agentic_verl.rewards.bfcl.match import ast_match

    return lambda case: ast_match(case["output"], case["functions"], case["possible_answer"], case["category"])


def bench(cases: list, rounds: int, chunk: int = 250) -> dict:
    """Samples/s of the official decode + check and of ours over the same cases, per wall-clock second and per
    CPU second of this process (the figure that a shared, overloaded machine distorts least). Every case is its
    own JSON-decoded object, so no per-question work can be shared between cases (as in an evaluation; an RL
    step, which scores many samples of one question, reuses our cached string normalisation).

    `first_pass`: one pass over the cases, the two alternating every `chunk` cases, before either has seen any
    (nothing cached yet). `best`: the best of `rounds` further passes of each (so a load spike on a shared
    machine hits both alike, and the best round of each counts)."""
    contenders = {"official": safe_evaluate, "ours": _import_ours()}
    chunks = [cases[i : i + chunk] for i in range(0, len(cases), chunk)]

    def one_pass() -> dict:
        spent = {(name, clock): 0.0 for name in contenders for clock in ("wall", "cpu")}
        for part in chunks:
            for name, fn in contenders.items():
                wall, cpu = time.perf_counter(), time.process_time()
                for case in part:
                    fn(case)
                spent[name, "wall"] += time.perf_counter() - wall
                spent[name, "cpu"] += time.process_time() - cpu
        return {key: len(cases) / max(seconds, 1e-9) for key, seconds in spent.items()}

    first = one_pass()
    best = dict.fromkeys(first, 0.0)
    for _ in range(rounds):
        for key, rate in one_pass().items():
            best[key] = max(best[key], rate)
    label = lambda rates: {f"{name}_{clock}": rate for (name, clock), rate in rates.items()}  # noqa: E731
    return {"samples_per_s": label(best), "first_pass": label(first), "n": len(cases), "rounds": rounds}


def category_scores(results: list) -> dict:
    """BFCL's per-category accuracy of model outputs `[{"id", "category", "result"}]`, with the questions and
    possible answers read by bfcl_eval's own loaders (language hints off, as its eval_runner reads them) and
    each output judged as in `evaluate` (eval_runner's per-entry logic for a prompting model)."""
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    scores = {}
    for category in dict.fromkeys(r["category"] for r in results):
        prompts = {e["id"]: e for e in load_dataset_entry(category, include_prereq=False,
                                                          include_language_specific_hint=False)}
        answers = {} if "relevance" in category else {e["id"]: e["ground_truth"] for e in load_ground_truth_entry(category)}
        mine = [r for r in results if r["category"] == category]
        correct = 0
        for r in mine:
            case = {"output": r["result"], "category": category, "functions": prompts[r["id"]]["function"],
                    "possible_answer": answers.get(r["id"])}
            correct += safe_evaluate(case)["valid"]
        scores[category] = {"correct": correct, "total": len(mine), "accuracy": correct / len(mine)}
    return scores


def official_messages(categories: list, limit: int) -> list:
    """BFCL's chat messages for the first `limit` questions of each category, built as its prompting handlers
    build them (`system_prompt_pre_processing_chat_model` over the language-hinted functions)."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING as ADDED
    from bfcl_eval.model_handler.utils import system_prompt_pre_processing_chat_model
    from bfcl_eval.utils import load_dataset_entry

    out = []
    for category in categories:
        for entry in load_dataset_entry(category, include_prereq=False)[:limit]:
            messages = system_prompt_pre_processing_chat_model(entry["question"][0], entry["function"], entry["id"])
            # multi-turn: the user message of a turn that adds withheld functions (base_handler's miss_func branch)
            added = {turn: ADDED.format(functions=docs) for turn, docs in entry.get("missed_function", {}).items()}
            out.append({"id": entry["id"], "messages": messages, **({"added": added} if added else {})})
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--prompts":  # --prompts LIMIT CATEGORY...
        print(json.dumps(official_messages(sys.argv[3:], int(sys.argv[2]))))
        return
    cases = [json.loads(line) for line in sys.stdin if line.strip()]
    if len(sys.argv) > 2 and sys.argv[1] == "--bench":
        print(json.dumps(bench(cases, int(sys.argv[2]))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--score":
        print(json.dumps(category_scores(cases)))
        return
    out = sys.stdout
    for case in cases:
        out.write(json.dumps(safe_evaluate(case)) + "\n")


if __name__ == "__main__":
    main()
