"""`agentic-verl eval bfcl --mode fc` on BFCL's multi-turn categories, end to end against the live BFCL environment
server: a policy answering every turn with its ground-truth calls as Qwen's hermes `<tool_call>` blocks passes every
question in FC mode and none in prompting mode; the FC prompts carry the functions as the chat template's tools (a
miss_func question's withheld function only from its turn), and the result files hold each executed step as
bfcl-eval's FC handlers store it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bfcl_env.conftest import bfcl_env  # noqa: F401 (the live server the tests share)

from agentic_verl.eval.bfcl_data import MULTI_TURN, load_multi_turn_questions
from agentic_verl.eval.bfcl_eval import BFCLEvalSettings, evaluate, write_result

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "agreement"))
from _bfcl_mt_cases import TurnScript, as_calls  # noqa: E402

pytestmark = pytest.mark.bfcl_official
PROMPTING_MARK = "You are an expert in composing functions"  # BFCL's prompting system prompt


def hermes(strings: list[str]) -> str:
    """Ground-truth call strings as one step of hermes blocks."""
    return "\n".join(f"<tool_call>\n{json.dumps(call)}\n</tool_call>" for call in as_calls(strings))


def gold_hermes(entry: dict) -> list[list[str]]:
    return [[hermes(turn), "Done."] if turn else ["There is nothing to call."] for turn in entry["ground_truth"]]


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return load_multi_turn_questions(["multi_turn"], limit=2)


def _evaluate(mode: str, questions, qwen, qwen_dir, env_url, out: Path | None = None):
    engine = TurnScript(qwen, {q["id"]: gold_hermes(q["entry"]) for q in questions})
    settings = BFCLEvalSettings(model=qwen_dir, categories=["multi_turn"], limit=2, mode=mode, label="fc/gold",
                                bfcl_env_url=env_url)
    result = evaluate(settings, engine=engine)
    if out is not None:
        write_result(result, out)
    return result, engine


def test_gold_hermes_calls_pass_every_question_in_fc_mode_and_none_in_prompting(bfcl_env, questions, qwen,  # noqa: F811
                                                                                qwen_dir, tmp_path):
    result, engine = _evaluate("fc", questions, qwen, qwen_dir, bfcl_env.url, tmp_path)
    assert list(result["categories"]) == list(MULTI_TURN)
    assert {c: s["accuracy"] for c, s in result["categories"].items()} == {c: 1.0 for c in MULTI_TURN}, [
        (r["id"], r["error_type"], r["errors"]) for r in result["questions"] if not r["valid"]]
    assert result["summary"]["multi_turn"] == 1.0 and result["summary"]["env_failures"] == 0

    # the FC request: the functions as tools in the template's own section, no prompting-mode system prompt
    for q in questions:
        first = engine.prompts[q["id"]][0]
        assert "<tools>" in first and PROMPTING_MARK not in first
        assert all(f'"name": "{doc["name"]}"' in first for doc in q["entry"]["function"]
                   if doc["name"] not in sum((q["entry"].get("missed_function") or {}).values(), []))
    miss = next(q for q in questions if q["entry"].get("missed_function"))
    [(turn, [withheld, *_])] = list(miss["entry"]["missed_function"].items())[:1]
    assert f'"{withheld}"' not in engine.prompts[miss["id"]][0].split("</tools>")[0]
    assert any(f'"{withheld}"' in prompt for prompt in engine.prompts[miss["id"]][1:])

    # bfcl-eval's FC result layout: an executed step as [{name: arguments JSON}], the turn's answer as text
    record = next(r for r in result["questions"] if r["id"] == questions[0]["id"])
    step = record["result"][next(i for i, t in enumerate(questions[0]["entry"]["ground_truth"]) if t)][0]
    assert isinstance(step, list) and all(isinstance(json.loads(v), dict) for call in step for v in call.values())
    files = list((tmp_path / "result").rglob("BFCL_v4_multi_turn_base_result.json"))
    assert len(files) == 1 and json.loads(files[0].read_text().splitlines()[0])["result"] == record["result"]

    prompting, _ = _evaluate("prompting", questions, qwen, qwen_dir, bfcl_env.url)
    assert {c: s["accuracy"] for c, s in prompting["categories"].items()} == {c: 0.0 for c in MULTI_TURN}
