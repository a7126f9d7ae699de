"""A fresh session's state is the same whatever ran before it. bfcl-eval's long-context simulators take module-level
records by reference (TravelAPI merges the same CREDIT_CARD_EXTENSION card dicts into every instance) and write
others (VehicleControlAPI's weather): without private copies, a flight booked through /check or a session charged
the module's card, and every later session started from the charged balance. /check also ran the model's calls
twice (bfcl-eval's checker, then the per-turn pass), charging twice."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from pathlib import Path

from _bfcl_env_testlib import load_entries, requires_venv

from agentic_verl.bfcl_env.client import BfclEnvClient
from agentic_verl.bfcl_env.process import BfclEnvProcess
from agentic_verl.bfcl_env.venv import venv_python

pytestmark = requires_venv

REPO = Path(__file__).resolve().parents[2]
CARD = "1234567812345678"  # one of bfcl-eval's CREDIT_CARD_EXTENSION cards (balance 5000.0)
BOOK = {"name": "book_flight", "arguments": {"access_token": "abc123token", "card_id": CARD, "travel_date": "2024-12-15",
                                             "travel_from": "SFO", "travel_to": "LAX", "travel_class": "economy"}}
# long-context BFCL questions, one per class that long context changes
QUESTIONS = ("multi_turn_long_context_150", "multi_turn_long_context_100", "multi_turn_long_context_50",
             "multi_turn_long_context_1")  # fmt: skip


def _questions() -> list[dict]:
    entries = {entry["id"]: entry for entry in load_entries("long_context")}
    chosen = [copy.deepcopy(entries[question]) for question in QUESTIONS]
    chosen[0]["initial_config"]["TravelAPI"]["budget_limit"] = 1000.0  # below the card's balance: booking works
    return chosen


def _run_in_venv(script: str) -> dict:
    proc = subprocess.run([str(venv_python()), "-c", script], cwd=REPO, env={"PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


async def _fresh_states(client: BfclEnvClient, questions: list[dict]) -> list[dict]:
    states = []
    for entry in questions:
        sid = await client.create_session(initial_config=entry["initial_config"],
                                          involved_classes=entry["involved_classes"], long_context=True)
        states.append(await client.state(sid))
        await client.close(sid)
    return states


async def _history(client: BfclEnvClient, questions: list[dict]) -> dict:
    """Checks and sessions that book on the extension card, cancel an extension booking, read the long-context
    weather and stock data; what they saw."""
    travel = questions[0]
    seen = {"checks": []}
    for _ in range(3):
        model_calls = [[[BOOK]]] + [[] for _ in travel["ground_truth"][1:]]
        verdict = await client.check(entry=travel, model_calls=model_calls)
        seen["checks"].append(verdict["details"]["model_instance_state"]["credit_card_list"][CARD]["balance"])
    sid = await client.create_session(initial_config=travel["initial_config"], involved_classes=["TravelAPI"],
                                      long_context=True)
    seen["booked"] = json.loads((await client.execute(sid, [BOOK]))[0])["booking_status"]
    await client.execute(sid, [{"name": "cancel_booking", "arguments": {"access_token": "abc123token",
                                                                        "booking_id": "booking_901"}}])
    seen["session_balance"] = (await client.state(sid))["TravelAPI"]["credit_card_list"][CARD]["balance"]
    for entry, calls in zip(questions[1:3], [[{"name": "get_stock_info", "arguments": {"symbol": "AAPL"}},
                                              {"name": "get_watchlist", "arguments": {}}],
                                             [{"name": "get_outside_temperature_from_google", "arguments": {}}]],
                            strict=True):
        other = await client.create_session(initial_config=entry["initial_config"],
                                            involved_classes=entry["involved_classes"], long_context=True)
        await client.execute(other, calls)
    return seen


def test_a_fresh_session_after_checks_and_sessions_equals_one_on_a_fresh_server():
    questions = _questions()

    async def on(server: BfclEnvProcess, history: bool):
        client = BfclEnvClient(server.url)
        try:
            seen = await _history(client, questions) if history else None
            return seen, await _fresh_states(client, questions)
        finally:
            await client.aclose()

    with BfclEnvProcess() as used:
        seen, after = asyncio.run(on(used, history=True))
    with BfclEnvProcess() as fresh:
        _, clean = asyncio.run(on(fresh, history=False))
    for entry, mine, theirs in zip(questions, after, clean, strict=True):
        assert mine == theirs, entry["id"]
    assert clean[0]["TravelAPI"]["credit_card_list"][CARD]["balance"] == 5000.0
    # the history did charge: each check's model instance booked once (200.0), the session booked and got a refund
    assert seen["checks"] == [4800.0, 4800.0, 4800.0] and seen["booked"] is True
    assert seen["session_balance"] == 5000.0 - 200.0 + 400.0


CHECK_ONCE = """
import json
from agentic_verl.bfcl_env import checker, simulators
from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import travel_booking

calls = []
real = travel_booking.TravelAPI.book_flight
def counted(self, *args, **kwargs):
    calls.append(kwargs.get("card_id"))
    return real(self, *args, **kwargs)
travel_booking.TravelAPI.book_flight = counted
entry = json.loads(%r)
methods_of = {name: set(simulators.method_owners([name])) for name in entry["involved_classes"]}
before = {f"{m.__name__}.{k}": repr(getattr(m, k)) for m, k in simulators.module_records(simulators.load_classes())}
parsed = checker.parse_check_request({"entry": entry, "model_calls": %r}, methods_of)
verdict = checker.check(*parsed)
after = {f"{m.__name__}.{k}": repr(getattr(m, k)) for m, k in simulators.module_records(simulators.load_classes())}
mutable_class_attributes = [f"{name}.{key}" for name, cls in simulators.load_classes().items()
                            for klass in cls.__mro__ if klass.__module__.startswith("bfcl_eval")
                            for key, value in vars(klass).items()
                            if not key.startswith("__") and isinstance(value, (dict, list, set, bytearray))]
print(json.dumps({"book_flight_calls": calls, "valid": verdict["valid"], "records_unchanged": before == after,
                  "records": len(before), "mutable_class_attributes": mutable_class_attributes}))
"""


def test_a_check_runs_the_models_calls_once_and_leaves_bfcl_evals_module_data_alone():
    travel = _questions()[0]
    model_calls = [[[BOOK]]] + [[] for _ in travel["ground_truth"][1:]]
    facts = _run_in_venv(CHECK_ONCE % (json.dumps(travel), model_calls))
    assert facts["book_flight_calls"] == [CARD]  # the ground truth books nothing; the model's one call ran once
    assert facts["records_unchanged"] and facts["records"] >= 20, facts
    assert facts["mutable_class_attributes"] == []  # the classes carry no shared state besides their modules'


ISOLATED_INSTANCES = """
import json
from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context
from agentic_verl.bfcl_env.simulators import load_classes, new_instances

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
    balances = _run_in_venv(ISOLATED_INSTANCES)
    assert balances["first"] == balances["before"] - 400.0
    assert balances["second"] == balances["before"] and balances["module"] == balances["before"], balances
