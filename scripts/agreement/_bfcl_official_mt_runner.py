"""bfcl-eval's own multi-turn executor and checker, run directly (inside `.venv-bfcl`), to compare the BFCL environment
server with (scripts/agreement/bfcl_env_agreement.py, tests/bfcl_env).

stdin: one JSON object per line, stdout: one per line.
  {"op": "execute", "initial_config", "involved_classes", "long_context", "steps": [[call string, ...], ...]}
      -> {"outputs": [[output, ...] per step]}   (execute_multi_turn_func_call, one fresh model name per request)
  {"op": "check", "entry": {"id", "initial_config", "involved_classes"}, "model": [turn][step][str], "gt": [turn][str]}
      -> {"valid", "error_type"}                 (multi_turn_checker)
"""

import json
import sys
import uuid

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call


def answer(request: dict) -> dict:
    model_name = f"official_{uuid.uuid4().hex}"
    if request["op"] == "execute":
        outputs = []
        for step in request["steps"]:
            result, _ = execute_multi_turn_func_call(step, request["initial_config"], request["involved_classes"],
                                                     model_name, "test_0", long_context=request["long_context"])
            outputs.append(result)
        return {"outputs": outputs}
    result = multi_turn_checker(request["model"], request["gt"], request["entry"], "", model_name)
    return {"valid": bool(result["valid"]), "error_type": None if result["valid"] else result["error_type"]}


for line in sys.stdin:
    if line.strip():
        print(json.dumps(answer(json.loads(line))), flush=True)
