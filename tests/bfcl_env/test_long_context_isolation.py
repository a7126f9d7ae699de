"""Long-context sessions do not share state through bfcl-eval's module-level extension records: TravelAPI's
long_context merges the same CREDIT_CARD_EXTENSION card dicts into every instance, so without a copy a charge in one
session shows up in every other session (and in bfcl-eval's module)."""

from __future__ import annotations

import json
import subprocess

from _bfcl_env_testlib import requires_venv

from agentic_verl.bfcl_env.venv import venv_python

pytestmark = requires_venv

SCRIPT = """
import json
from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context
from agentic_verl.bfcl_env.sessions import load_classes, new_instances

card = next(iter(long_context.CREDIT_CARD_EXTENSION))
classes = load_classes()
first, second = (new_instances(classes, {}, ["TravelAPI"], long_context=True)["TravelAPI"] for _ in range(2))
before = second.credit_card_list[card]["balance"]
first.credit_card_list[card]["balance"] -= 400.0  # what book_flight does to the card it charges
print(json.dumps({"before": before, "first": first.credit_card_list[card]["balance"],
                  "second": second.credit_card_list[card]["balance"],
                  "module": long_context.CREDIT_CARD_EXTENSION[card]["balance"]}))
"""


def test_a_charge_in_one_long_context_session_leaves_the_others_alone():
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([str(venv_python()), "-c", SCRIPT], cwd=repo, env={"PYTHONPATH": str(repo)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    balances = json.loads(proc.stdout.strip().splitlines()[-1])
    assert balances["first"] == balances["before"] - 400.0
    assert balances["second"] == balances["before"] and balances["module"] == balances["before"], balances
