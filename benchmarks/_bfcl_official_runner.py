"""Run BFCL's official decoder + AST checker over JSONL cases; runs inside `.venv-bfcl` (see bfcl_official.py).

stdin: one JSON object per line: {"output", "functions", "possible_answer", "category"}.
stdout: one JSON object per line: {"valid": bool, "error_type": str | None, "crashed": str | None}.
With `--bench N`, instead times the official decode + check and our ast_match (imported from this checkout)
over the same cases in N alternating rounds, and prints the best round's samples/s of each (per wall-clock and
per CPU second) as JSON.

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
    root = Path(__file__).resolve().parent.parent
    for name, path in (("agentic_verl", root / "agentic_verl"), ("agentic_verl.rewards", root / "agentic_verl" / "rewards")):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [str(path)]
            sys.modules[name] = module
    from agentic_verl.rewards.bfcl.match import ast_match

    return lambda case: ast_match(case["output"], case["functions"], case["possible_answer"], case["category"])


def bench(cases: list, rounds: int, chunk: int = 250) -> dict:
    """Samples/s of the official decode + check and of ours over the same cases, per wall-clock second and per
    CPU second of this process (the figure that a shared, overloaded machine distorts least). Each round
    alternates the two every `chunk` cases, so a load spike hits both alike; the best round of each counts."""
    contenders = {"official": safe_evaluate, "ours": _import_ours()}
    for fn in contenders.values():  # warm up (our per-question caches fill here, as in an RL run)
        for case in cases:
            fn(case)
    best = {(name, clock): 0.0 for name in contenders for clock in ("wall", "cpu")}
    chunks = [cases[i : i + chunk] for i in range(0, len(cases), chunk)]
    for _ in range(rounds):
        spent = dict.fromkeys(best, 0.0)
        for part in chunks:
            for name, fn in contenders.items():
                wall, cpu = time.perf_counter(), time.process_time()
                for case in part:
                    fn(case)
                spent[name, "wall"] += time.perf_counter() - wall
                spent[name, "cpu"] += time.process_time() - cpu
        for key, seconds in spent.items():
            best[key] = max(best[key], len(cases) / max(seconds, 1e-9))
    return {"samples_per_s": {f"{name}_{clock}": rate for (name, clock), rate in best.items()}, "n": len(cases),
            "rounds": rounds}


def main() -> None:
    cases = [json.loads(line) for line in sys.stdin if line.strip()]
    if len(sys.argv) > 2 and sys.argv[1] == "--bench":
        print(json.dumps(bench(cases, int(sys.argv[2]))))
        return
    out = sys.stdout
    for case in cases:
        out.write(json.dumps(safe_evaluate(case)) + "\n")


if __name__ == "__main__":
    main()
