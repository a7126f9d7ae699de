"""function_call under hostile model output: thousands of generated outputs (hostile_outputs.py) through the real
loop, the real Qwen tokenizer and chat template and BFCL's prompt, in each of BFCL's languages.

Whatever the model writes, `run` returns; the token invariants hold; the response fits the budget; the output is
either decoded calls (each counted as a tool call) or exactly one failure of the model's kinds (no_call,
parse_error, truncated_by_length). `internal_error` (a bug in our decoder) must never appear: the fuzzing is also a
test of the decoder."""

from __future__ import annotations

import json
import math

import pytest
from agent_loop_helpers import sample, verl_config
from fuzz_harness import FuzzRunner, check_hostile_output, failures
from hostile_outputs import THINK_TAGS, cut_anywhere, hostile_text, many_calls, python_calls, tag_imitations, token_ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.rewards.bfcl import bfcl_ast

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
RESPONSE_LENGTH, MAX_TOKENS = 1024, 512
EXAMPLES = 2200
FUNCTIONS = [{"name": "get_weather", "description": "Current weather in a city.",
              "parameters": {"type": "dict", "required": ["city"],
                             "properties": {"city": {"type": "string", "description": "City name"}}}}]
ANSWER = json.dumps([{"get_weather": {"city": ["Paris"]}}])
MODEL_FAILURES = ("no_call", "parse_error", "truncated_by_length")


def fc_outputs():
    """BFCL-shaped output with hostile parts: reasoning (closed, unclosed, nested), then calls, JSON or prose."""
    reasoning = st.one_of(st.just(""), st.just("<think>ok</think>\n\n"), tag_imitations(THINK_TAGS),
                          hostile_text(max_pieces=2).map(lambda t: f"<think>{t}</think>\n\n"))
    body = st.one_of(python_calls(), cut_anywhere(python_calls()), many_calls(), hostile_text(max_pieces=3),
                     python_calls().map(lambda c: f"```python\n{c}\n```"))
    return st.builds(lambda r, b, eos: r + b + ("<|im_end|>" if eos else ""), reasoning, body, st.booleans())


@pytest.fixture(scope="module")
def fuzz_setup(qwen_dir, qwen_tokenizer):
    config = verl_config(qwen_dir, f"+actor_rollout_ref.rollout.custom.function_call.max_tokens={MAX_TOKENS}",
                         response_length=RESPONSE_LENGTH)
    runner = FuzzRunner()
    yield runner, config, qwen_tokenizer
    runner.close()


def test_hostile_outputs_never_escape_function_call(fuzz_setup):
    runner, config, tok = fuzz_setup
    agent = runner.build("function_call", config, tok)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(turn=st.one_of(fc_outputs(), fc_outputs(), token_ids(tok)),
           language=st.sampled_from(["python", "java", "javascript"]))
    def one_sample(turn, language):
        server = runner.server(tok, [turn], MAX_TOKENS)
        extra_info = {"functions": json.dumps(FUNCTIONS), "category": f"simple_{language}", "language": language}

        async def go():
            kwargs = sample([{"role": "user", "content": "Weather in Paris?"}], extra_info=extra_info)
            return await agent.run(dict(SAMPLING), **kwargs)

        out = runner.run(go(), server)
        metrics = check_hostile_output(out, server, tok, RESPONSE_LENGTH)
        info = out.extra_fields["function_call"]
        counted = {kind: n for kind, n in failures(out).items() if n}
        if info["failure"] is None:
            assert info["calls"] and not counted
            assert metrics["num_tool_calls"] == sum(len(call) for call in info["calls"])
        else:
            assert info["failure"] in MODEL_FAILURES, info  # internal_error: a decoder bug the fuzzing found
            assert counted == {info["failure"]: 1.0} and info["calls"] is None
            assert metrics["num_tool_calls"] == 0
        # the reward path: BFCL's AST match on the decoded response, as verl's reward manager calls it
        solution = tok.decode(out.response_ids, skip_special_tokens=True)
        assert math.isfinite(bfcl_ast(solution, ANSWER, extra_info)["score"])

    one_sample()
    print("STATS", runner.outputs, runner.examples, runner.kinds)
    assert runner.outputs >= 2000, (runner.outputs, runner.examples)


def test_three_thousand_calls_in_one_output_are_all_decoded_and_counted(fuzz_setup, qwen_dir):
    """Thousands of calls, past what the fuzzed turns keep (MAX_TOKENS): BFCL decodes them all, so does the loop."""
    runner, _, tok = fuzz_setup
    calls = "[" + ", ".join(f'get_weather(city="c{i}")' for i in range(3000)) + "]"
    config = verl_config(qwen_dir, "+actor_rollout_ref.rollout.custom.function_call.max_tokens=40000",
                         response_length=40000)
    agent = runner.build("function_call", config, tok)
    server = runner.server(tok, ["<think>all</think>\n\n" + calls + "<|im_end|>"], 40000)
    kwargs = sample([{"role": "user", "content": "Weather?"}], extra_info={"functions": json.dumps(FUNCTIONS)})
    out = runner.run(agent.run(dict(SAMPLING), **kwargs), server)
    metrics = check_hostile_output(out, server, tok, 40000)
    assert out.extra_fields["function_call"]["failure"] is None
    assert len(out.extra_fields["function_call"]["calls"]) == 3000 and metrics["num_tool_calls"] == 3000
