"""bfcl_multi_turn against calls a hostile or badly trained model writes, on the LIVE BFCL environment server: the
two reproduced crashes (issue 38: `[cd(folder=1e999)]`, 129 calls in one step) and their relatives run as BFCL
runs them. The expected tool outputs come from bfcl-eval itself: its own decoder (`default_decode_execute_prompting`)
and executor (`execute_multi_turn_func_call`), run in `.venv-bfcl` on the same text. Also: a dead server mid-run
is a counted failure of that trajectory, never an exception out of `run`."""

from __future__ import annotations

import json
import subprocess

import pytest
from agent_loop_helpers import ScriptedServer, run_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants
from bfcl_env.conftest import bfcl_env  # noqa: F401 (the live server the tests share)

from agentic_verl.agent_loops import bfcl_multi_turn
from agentic_verl.bfcl_env.venv import ensure_venv
from agentic_verl.eval.bfcl_data import load_multi_turn_questions, multi_turn_messages
from agentic_verl.rewards.bfcl import multi_turn as reward_module
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

pytestmark = pytest.mark.bfcl_official
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
ENTRY_ID = "multi_turn_base_12"  # GorillaFileSystem only, 3 turns
# bfcl-eval's own decoding and execution of a step's text, in its venv (understanding is ours, the code is theirs)
_BFCL_RUNNER = """
import json, sys
from bfcl_eval.model_handler.utils import default_decode_execute_prompting
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call
request = json.load(sys.stdin)
outputs = []
for text in request["steps"]:
    calls = default_decode_execute_prompting(text)
    outputs.append(execute_multi_turn_func_call(calls, request["initial_config"], request["involved_classes"],
                                                "agentic_verl_hostile", request["id"])[0])
print(json.dumps(outputs))
"""


@pytest.fixture(autouse=True)
def _fresh_clients():
    bfcl_multi_turn._CLIENTS.clear()  # the loop's clients belong to event loops that asyncio.run closes
    bfcl_multi_turn.ENV_FAILURES.clear()
    yield
    bfcl_multi_turn._CLIENTS.clear()
    bfcl_multi_turn.ENV_FAILURES.clear()


@pytest.fixture(scope="module")
def entry() -> dict:
    [entry] = [q["entry"] for q in load_multi_turn_questions(["multi_turn_base"]) if q["id"] == ENTRY_ID]
    return entry


def bfcl_outputs(entry: dict, steps: list[str]) -> list[list[str]]:
    """What bfcl-eval's inference shows the model for each step's text (one session, the steps in order)."""
    request = {"id": entry["id"], "initial_config": entry["initial_config"],
               "involved_classes": entry["involved_classes"], "steps": steps}
    done = subprocess.run([str(ensure_venv()), "-c", _BFCL_RUNNER], input=json.dumps(request), capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def run_steps(env_url: str, model_dir, tok, entry: dict, steps: list[str]):
    """The loop on `entry` where the policy writes `steps` in turn 0, then answers without a call in every turn."""
    eos = tok.eos_token
    script = [*(step + eos for step in steps), *["Done." + eos] * len(entry["question"])]
    custom = "+actor_rollout_ref.rollout.custom.bfcl_multi_turn"
    config = verl_config(model_dir, f"{custom}.env_url={env_url}", f"{custom}.max_tokens_per_step=4096",
                         prompt_length=8192, response_length=16384)
    prompt = multi_turn_messages(parse_entry(entry, need_ground_truth=True), "funreason")
    server = ScriptedServer(tok, script)
    out = run_loop("bfcl_multi_turn", config, server, tok, SAMPLING, sample(prompt, extra_info=dict(entry)))
    check_token_invariants(out, server, tok)
    return out


@pytest.fixture()
def executed(monkeypatch) -> list[list[str]]:
    """The outputs the environment client returned to the loop, one list per executed step."""
    outputs, real = [], bfcl_multi_turn.env_client

    class Recording:
        def __init__(self, client):
            self.client = client

        def __getattr__(self, name):
            return getattr(self.client, name)

        async def execute(self, session_id, calls):
            outputs.append(await self.client.execute(session_id, calls))
            return outputs[-1]

    monkeypatch.setattr(bfcl_multi_turn, "env_client", lambda cfg: Recording(real(cfg)))
    return outputs


@pytest.mark.parametrize("steps", [
    # issue 38's first crash: 1e999 decodes to inf; BFCL writes `cd(folder=inf)` and its eval raises NameError
    ["[cd(folder=1e999)]", "[cd(folder='document'), mkdir(dir_name=[-1e999]), ls(), cd(folder=1e999-1e999)]"],
    # the second: 129 calls in one step (the server takes 128 per request); BFCL runs them all, in order
    ["[" + ", ".join([f"mkdir(dir_name='d{i}')" for i in range(129)] + ["ls()"]) + "]"],
], ids=["non_finite_numbers", "129_calls"])
def test_calls_that_crashed_the_loop_run_as_bfcl_runs_them(steps, bfcl_env, qwen_dir, qwen_tokenizer, entry,  # noqa: F811
                                                           executed):
    out = run_steps(bfcl_env.url, qwen_dir, qwen_tokenizer, entry, steps)
    record = out.extra_fields["bfcl_multi_turn"]
    assert record["terminated"] is None and record["env_failure"] is None
    expected = bfcl_outputs(entry, steps)
    assert executed == expected  # BFCL's own outputs, error texts included, for every call (none dropped)
    assert record["turns"][0]["calls"] == sum(len(step) for step in expected) and record["turns"][0]["end"] == "no_call"
    assert record["turns"][0]["env_errors"] == sum(o.startswith("Error during execution") for s in expected for o in s)
    assert out.extra_fields["agent_metrics"]["failure/tool_error"] == record["turns"][0]["env_errors"]
    verdict = reward_module.bfcl_multi_turn("", None, {**entry, **out.extra_fields})
    assert (verdict["score"], verdict["error_type"]) == (0.0, "multi_turn:instance_state_mismatch")  # judged


def test_a_dead_server_is_a_counted_failure_of_the_trajectory(qwen_dir, qwen_tokenizer, entry):
    from agentic_verl.net import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    out = run_steps(dead, qwen_dir, qwen_tokenizer, entry, [])
    record = out.extra_fields["bfcl_multi_turn"]
    assert (record["terminated"], out.response_ids) == ("env_error", [])
    assert "create_session" in record["env_failure"] and "cannot reach" in record["env_failure"]
    assert out.extra_fields["agent_metrics"]["failure/tool_error"] == 1
    assert bfcl_multi_turn.ENV_FAILURES.count(dead) == 1
    with pytest.raises(RuntimeError, match="environment failed during the rollout"):
        reward_module.bfcl_multi_turn("", None, {**entry, **out.extra_fields})
