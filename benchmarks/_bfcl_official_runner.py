"""Run BFCL's official decoder + AST checker over JSONL cases; runs inside `.venv-bfcl` (see bfcl_official.py).

stdin: one JSON object per line: {"output", "functions", "possible_answer", "category"}.
stdout: one JSON object per line: {"valid": bool, "error_type": str | None, "crashed": str | None}.
With `--bench N`, instead times decode + check over the cases N times and prints samples/s as JSON.

This mirrors bfcl_eval.eval_checker.eval_runner (_evaluate_single_ast_entry / _evaluate_single_relevance_entry)
for a prompting model, whose decode_ast is default_decode_ast_prompting. bfcl_eval.constants.model_config
imports every API client; it is replaced by a stub whose only use (convert_func_name) answers
"no underscore-to-dot renaming", which is the case for prompting models.
"""

import json
import sys
import time
import types


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


def main() -> None:
    cases = [json.loads(line) for line in sys.stdin if line.strip()]
    if len(sys.argv) > 2 and sys.argv[1] == "--bench":
        repeats = int(sys.argv[2])
        for case in cases:  # warm up
            safe_evaluate(case)
        start = time.perf_counter()
        for _ in range(repeats):
            for case in cases:
                safe_evaluate(case)
        elapsed = time.perf_counter() - start
        print(json.dumps({"samples_per_s": repeats * len(cases) / elapsed, "n": repeats * len(cases)}))
        return
    out = sys.stdout
    for case in cases:
        out.write(json.dumps(safe_evaluate(case)) + "\n")


if __name__ == "__main__":
    main()
