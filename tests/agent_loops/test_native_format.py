"""`format: native` in function_call and bfcl_multi_turn: tools rendered by the real Qwen chat template, calls read
by verl's hermes ToolParser, results returned as `tool` messages; token in / token out; the BFCL rewards on what the
loop read (through verl's own loader of reward_fns/); hostile native outputs (hypothesis) never escape."""

from __future__ import annotations

import json
import math

import pytest
from agent_loop_helpers import ScriptedServer, run_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants, observation_texts
from fuzz_harness import FuzzRunner, check_hostile_output, failures
from hostile_outputs import hostile_text, json_tool_calls, many_calls, tag_imitations, token_ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bfcl_multi_turn import ENV_URL, LS, LS_ROOT, REPO, TWO_TURNS, env, row  # noqa: F401 (env: the fixture)

from agentic_verl.agent_loops.function_call import FunctionCallConfig
from agentic_verl.agent_loops.prompts import bfcl_messages
from agentic_verl.rewards.bfcl.native_calls import openai_tools

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
FUNCTIONS = [{"name": "math.add", "description": "Add two integers.",
              "parameters": {"type": "dict", "required": ["a", "b"],
                             "properties": {"a": {"type": "integer", "description": "first"},
                                            "b": {"type": "integer", "description": "second"}}}}]
ANSWER = json.dumps([{"math.add": {"a": [1], "b": [2]}}])
QUESTION = [{"role": "user", "content": "What is 1 + 2?"}]
GOLD = '<think>Add them.</think>\n\n<tool_call>\n{"name": "math_add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


def _function_call(model_dir, tok, script, format="native", **extra):
    config = verl_config(model_dir, f"+actor_rollout_ref.rollout.custom.function_call.format={format}",
                         prompt_length=2048)
    server = ScriptedServer(tok, list(script))
    extra_info = {"functions": json.dumps(FUNCTIONS), "category": "simple_python", **extra}
    out = run_loop("function_call", config, server, tok, SAMPLING,
                   sample(bfcl_messages(QUESTION, FUNCTIONS), extra_info=extra_info))
    return out, server, extra_info


def _reward(extra_info, out, tok):
    """grpo_ast's reward (AST + 0.1 x format) loaded by verl's loader and called as verl's reward manager calls it:
    the decoded response, the loop's extra_fields merged into extra_info."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "reward_fns/composed.py"), "name": "compute_score",
        "reward_kwargs": {"config": str(REPO / "reward_fns/configs/funreason_ast_format.yaml")}}}})
    solution = tok.decode(out.response_ids, skip_special_tokens=True)
    return get_custom_reward_fn(config)(data_source="bfcl", solution_str=solution, ground_truth=ANSWER,
                                        extra_info={**extra_info, **out.extra_fields})


# -- function_call ---------------------------------------------------------------------------------------------------
def test_function_call_native_renders_tools_and_reads_hermes_calls(qwen_dir, qwen_tokenizer):
    tok = qwen_tokenizer
    out, server, extra_info = _function_call(qwen_dir, tok, [GOLD + tok.eos_token])

    # BFCL's FC request: the question's turns without our prompting system prompt, the functions as OpenAI tools
    tools, names = openai_tools(FUNCTIONS)
    assert names == {"math_add": "math.add"}
    expected = tok.apply_chat_template(QUESTION, tools=tools, add_generation_prompt=True, tokenize=False)
    assert tok.decode(out.prompt_ids, skip_special_tokens=False) == expected
    assert '"math_add"' in expected and "[func_name1(" not in expected  # no prompting-mode instructions
    check_token_invariants(out, server, tok)

    record = out.extra_fields["function_call"]
    assert record["format"] == "native" and record["failure"] is None and record["native_failure"] is None
    assert record["calls"] == [{"math.add": {"a": 1, "b": 2}}]  # BFCL's name back
    assert out.extra_fields["agent_metrics"]["num_tool_calls"] == 1
    result = _reward(extra_info, out, tok)
    assert result["score"] == pytest.approx(1.1) and result["bfcl_ast"] == 1.0 and result["fc_format"] == 1.0


@pytest.mark.parametrize("output, failure, error_type", [
    ("<think>Add.</think>\n\n[math.add(a=1, b=2)]", "no_call", "bfcl:decode_failed"),  # prompting syntax
    ('<think>Add.</think>\n\n<tool_call>\n{"name": "math_add", "arguments": {"a": 1,\n</tool_call>', "parse_error",
     "fc:unparsed_call"),
    ('<think>Add.</think>\n\n<tool_call>\n{"name": "math_add", "arguments": [1, 2]}\n</tool_call>', "parse_error",
     "fc:arguments_not_object"),
    ('<think>Add.</think>\n\n<tool_call>\n{"name": "math_add", "arguments": {"a": 1, "b": 3}}\n</tool_call>', None,
     "bfcl:value_error"),
])
def test_function_call_native_failures_are_counted_and_scored(output, failure, error_type, qwen_dir, qwen_tokenizer):
    tok = qwen_tokenizer
    out, server, extra_info = _function_call(qwen_dir, tok, [output + tok.eos_token])
    record = out.extra_fields["function_call"]
    assert record["failure"] == failure
    counted = {kind: n for kind, n in failures(out).items() if n}
    assert counted == ({failure: 1.0} if failure else {})
    result = _reward(extra_info, out, tok)
    assert result["bfcl_ast"] == 0.0 and result["bfcl_ast/error_type"] == error_type


def test_hermes_calls_score_nothing_in_prompting_mode(qwen_dir, qwen_tokenizer):
    tok = qwen_tokenizer
    out, _, extra_info = _function_call(qwen_dir, tok, [GOLD + tok.eos_token], format="prompting")
    assert out.extra_fields["function_call"]["format"] == "prompting"
    assert out.extra_fields["function_call"]["failure"] == "no_call"  # a block is not a call list
    assert _reward(extra_info, out, tok)["score"] == 0.0


def test_a_template_without_tools_is_refused_before_generating(smol_dir, smol_tokenizer):
    with pytest.raises(ValueError, match="does not render tools.*format: prompting"):
        _function_call(smol_dir, smol_tokenizer, ["x"])


def test_unknown_format_and_parser_name_the_known_ones():
    with pytest.raises(ValueError, match="known: prompting, native"):
        FunctionCallConfig(format="json")
    with pytest.raises(ValueError, match="registry has .*hermes"):
        FunctionCallConfig(format="native", tool_parser="nope")


def test_the_reward_refuses_native_rows_without_the_loops_record():
    from agentic_verl.rewards.bfcl import bfcl_ast

    with pytest.raises(ValueError, match="no record of the function_call loop"):
        bfcl_ast(GOLD, ANSWER, {"functions": FUNCTIONS, "function_call": {"format": "native"}})


def native_outputs():
    """Hermes-shaped outputs with hostile parts: JSON blocks (valid, broken, non-object, hostile values), thousands
    of blocks, imitated tags, prose; with or without reasoning and EOS."""
    reasoning = st.sampled_from(["", "<think>ok</think>\n\n", "<think>unclosed"])
    body = st.one_of(json_tool_calls(), st.lists(json_tool_calls(), max_size=4).map("".join), many_calls(400),
                     tag_imitations(("<tool_call>", "</tool_call>")), hostile_text(max_pieces=3),
                     st.just(GOLD))
    return st.builds(lambda r, b, eos: r + b + ("<|im_end|>" if eos else ""), reasoning, body, st.booleans())


def test_hostile_native_outputs_never_escape_function_call(qwen_dir, qwen_tokenizer):
    from agentic_verl.rewards.bfcl import bfcl_ast

    tok = qwen_tokenizer
    config = verl_config(qwen_dir, "+actor_rollout_ref.rollout.custom.function_call.format=native",
                         "+actor_rollout_ref.rollout.custom.function_call.max_tokens=512",
                         prompt_length=2048, response_length=1024)
    runner = FuzzRunner()
    agent = runner.build("function_call", config, tok)
    extra_info = {"functions": json.dumps(FUNCTIONS), "category": "simple_python"}
    try:
        @settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(turn=st.one_of(native_outputs(), native_outputs(), token_ids(tok)))
        def one_sample(turn):
            server = runner.server(tok, [turn], 512)

            async def go():
                return await agent.run(dict(SAMPLING), **sample(list(QUESTION), extra_info=dict(extra_info)))

            out = runner.run(go(), server)
            metrics = check_hostile_output(out, server, tok, 1024)
            record = out.extra_fields["function_call"]
            counted = {kind: n for kind, n in failures(out).items() if n}
            if record["failure"] is None:
                assert record["calls"] and not counted and record["native_failure"] is None
                assert metrics["num_tool_calls"] == len(record["calls"])
            else:
                assert record["failure"] in ("no_call", "parse_error", "truncated_by_length"), record
                assert counted == {record["failure"]: 1.0} and record["calls"] is None
            solution = tok.decode(out.response_ids, skip_special_tokens=True)
            assert math.isfinite(bfcl_ast(solution, ANSWER, {**extra_info, **out.extra_fields})["score"])

        one_sample()
    finally:
        runner.close()


# -- bfcl_multi_turn -------------------------------------------------------------------------------------------------
def _hermes(*calls: dict) -> str:
    """Calls as Qwen's template renders an assistant message's tool_calls (so the re-rendering can be compared)."""
    return "\n".join(f"<tool_call>\n{json.dumps(call)}\n</tool_call>" for call in calls)


def _multi_turn(model_dir, tok, script, prompt, extra_info, **fields):
    fields = {"env_url": ENV_URL, "format": "native", **fields}
    overrides = [f"+actor_rollout_ref.rollout.custom.bfcl_multi_turn.{k}={v}" for k, v in fields.items()]
    config = verl_config(model_dir, *overrides, prompt_length=4096, response_length=2048)
    server = ScriptedServer(tok, list(script))
    out = run_loop("bfcl_multi_turn", config, server, tok, SAMPLING, sample(prompt, extra_info=dict(extra_info)))
    return out, server


def test_multi_turn_native_follows_bfcls_fc_conversation(qwen_dir, qwen_tokenizer, env):  # noqa: F811
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    cd_touch = [{"name": "cd", "arguments": {"folder": "docs"}},
                {"name": "touch", "arguments": {"file_name": "todo.txt"}}]
    script = [_hermes(LS) + eos, _hermes(*cd_touch) + eos, "I created todo.txt in docs." + eos,
              _hermes(LS) + eos, "docs holds notes.txt and todo.txt." + eos]
    prompt, extra_info = row(TWO_TURNS)  # the row's prompting prompt: native mode builds its own request
    out, server = _multi_turn(qwen_dir, tok, script, prompt, extra_info)

    from fake_bfcl_env import FUNCTIONS as ENV_FUNCTIONS
    tools, _ = openai_tools(ENV_FUNCTIONS)
    text = [tok.decode(tok.encode(s, add_special_tokens=False), skip_special_tokens=True) for s in script]

    def called(content, calls):
        return {"role": "assistant", "content": content,
                "tool_calls": [{"type": "function", "function": c} for c in calls]}

    ls_docs = '{"current_directory_content": ["notes.txt", "todo.txt"]}'
    conversation = [*TWO_TURNS[0], called("", [LS]), {"role": "tool", "content": LS_ROOT},
                    called("", cd_touch), {"role": "tool", "content": '{"current_working_directory": "docs"}'},
                    {"role": "tool", "content": "None"}, {"role": "assistant", "content": text[2]}, *TWO_TURNS[1],
                    called("", [LS]), {"role": "tool", "content": ls_docs}]
    rendered = tok.apply_chat_template(conversation, tools=tools, tokenize=False, add_generation_prompt=True)
    assert tok.decode(server.calls[-1]["prompt_ids"], skip_special_tokens=False) == rendered
    assert out.prompt_ids == tok.apply_chat_template(TWO_TURNS[0], tools=tools, add_generation_prompt=True,
                                                     tokenize=True, return_dict=False)
    check_token_invariants(out, server, tok)
    assert len(observation_texts(out, tok)) == 4

    record = out.extra_fields["bfcl_multi_turn"]
    assert record["format"] == "native"
    assert record["model_calls"] == [[[LS], cd_touch], [[LS]]]
    assert [t["end"] for t in record["turns"]] == ["no_call", "no_call"]
    assert [calls for _, calls in env.executed] == [[LS], cd_touch, [LS]]


def test_multi_turn_native_added_functions_come_as_a_user_turn_and_become_callable(qwen_dir, qwen_tokenizer,
                                                                                   env):  # noqa: F811
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    question = [TWO_TURNS[0], [], [{"role": "user", "content": "Go into docs."}]]
    prompt, extra_info = row(question, missed={"1": ["cd"]})
    cd = {"name": "cd", "arguments": {"folder": "docs"}}
    script = ["Done." + eos, "Noted." + eos, _hermes(cd) + eos, "In docs." + eos]
    out, server = _multi_turn(qwen_dir, tok, script, prompt, extra_info)
    first = tok.decode(out.prompt_ids, skip_special_tokens=False)
    assert '"name": "ls"' in first and '"name": "cd"' not in first  # withheld until turn 1
    added = observation_texts(out, tok)[0]
    assert '"cd"' in added and "I have updated some more functions you can choose from" in added
    assert out.extra_fields["bfcl_multi_turn"]["model_calls"] == [[], [], [[cd]]]
    check_token_invariants(out, server, tok)


def test_multi_turn_native_parse_failures_end_the_turn_and_count(qwen_dir, qwen_tokenizer, env):  # noqa: F811
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    script = ['<tool_call>\n{"name": "ls", "arguments": {\n</tool_call>' + eos, "ok" + eos]
    out, server = _multi_turn(qwen_dir, tok, script, *row(TWO_TURNS))
    record = out.extra_fields["bfcl_multi_turn"]
    assert record["turns"][0]["end"] == "parse_error" and record["turns"][0]["decode_failures"] == 1
    assert record["model_calls"] == [[], []] and env.executed == []
    assert failures(out)["parse_error"] == 1.0
