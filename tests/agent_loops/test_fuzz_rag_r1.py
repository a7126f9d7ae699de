"""rag_r1 under hostile model output: thousands of generated turns (hostile_outputs.py) through the real loop, the
real Qwen tokenizer and chat template, and the real retrieval server on loopback.

Each example is a script of 1-6 turns (text or raw token ids; turns longer than the turn budget are cut at it, as
a server does), in sq or mq mode. Whatever the turns hold, `run` returns; the token invariants hold; the response
fits the budget; every turn that did not answer or search is a counted failure; the hostile queries never make
the retrieval server look down (the fail-fast streak stays at 0)."""

from __future__ import annotations

import math

import pytest
from agent_loop_helpers import sample, verl_config
from fuzz_harness import FuzzRunner, check_hostile_output, failures
from hostile_outputs import (
    RAG_TAGS,
    brackets,
    control_text,
    hostile_text,
    long_strings,
    numbers,
    tag_imitations,
    token_ids,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.agent_loops.prompts import rag_r1_messages
from agentic_verl.agent_loops.rag_r1 import SEARCH_FAILURES
from agentic_verl.rewards.qa import qa_em, qa_f1

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
RESPONSE_LENGTH, TURN_TOKENS, MAX_TURNS = 1024, 96, 4
EXAMPLES, MIN_OUTPUTS = 800, 2000


def rag_queries():
    """What a model puts between <search> and </search>: hostile text, answer/information tags, many commas."""
    return st.one_of(
        hostile_text(max_pieces=3), numbers(), control_text(), brackets(), long_strings(),
        tag_imitations(RAG_TAGS), st.just("<answer> Paris </answer>"), st.just("</information> <answer>x"),
        st.integers(0, 500).map(lambda n: ",".join(["q"] * n)), st.just(""), st.just(" , , "),
    )


def rag_turns(answers: bool):
    """One turn: hostile text with well-formed and broken search (and answer) blocks around hostile content."""
    search = rag_queries().map(lambda q: f"<search>{q}</search>")
    unclosed = rag_queries().map(lambda q: f"<search>{q}")
    answer = rag_queries().map(lambda q: f"<answer>{q}</answer>")
    return hostile_text(extra=[search, unclosed, answer] if answers else [search, unclosed], max_pieces=4)


@pytest.fixture(scope="module")
def fuzz_setup(qwen_dir, qwen_tokenizer, retrieval_server):
    fields = {"retrieval_url": retrieval_server.url, "retrieval_max_retries": 0, "retrieval_timeout_s": 5.0,
              "max_turns": MAX_TURNS, "max_tokens_per_turn": TURN_TOKENS, "max_obs_length": 64}
    overrides = [f"+actor_rollout_ref.rollout.custom.rag_r1.{k}={v}" for k, v in fields.items()]
    config = verl_config(qwen_dir, *overrides, response_length=RESPONSE_LENGTH)
    SEARCH_FAILURES.clear()
    runner = FuzzRunner()
    yield runner, config, qwen_tokenizer, retrieval_server.url
    runner.close()
    SEARCH_FAILURES.clear()


def test_hostile_turns_never_escape_rag_r1(fuzz_setup):
    runner, config, tok, url = fuzz_setup
    agent = runner.build("rag_r1", config, tok)
    turn = st.one_of(rag_turns(answers=False), rag_turns(answers=False), rag_turns(answers=True), token_ids(tok))

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(script=st.lists(turn, min_size=4, max_size=7), mode=st.sampled_from(["sq", "mq"]))
    def one_sample(script, mode):
        server = runner.server(tok, script, TURN_TOKENS)

        async def go():
            kwargs = sample(rag_r1_messages("Who wrote Hamlet", mode=mode), extra_info={"rag_r1": {"mode": mode}})
            return await agent.run(dict(SAMPLING), **kwargs)

        out = runner.run(go(), server)
        metrics = check_hostile_output(out, server, tok, RESPONSE_LENGTH)
        info = out.extra_fields["rag_r1"]
        counted = failures(out)
        # every turn answered, searched (the last turn's search is counted apart) or is a counted failure
        acted = metrics["num_tool_calls"] + (info["answer"] is not None) + info["searches_after_budget"]
        turn_failures = counted["no_call"] + counted["parse_error"] + counted["truncated_by_length"]
        assert metrics["num_turns"] <= acted + turn_failures, (metrics, info)
        assert metrics["num_turns"] <= MAX_TURNS + 1
        assert SEARCH_FAILURES.count(url) == 0, "a model's query made the retrieval server look down"
        # the reward path: exact match and F1 of the last <answer> in the decoded response
        solution = tok.decode(out.response_ids, skip_special_tokens=True)
        assert all(math.isfinite(reward(solution, ["Shakespeare"])["score"]) for reward in (qa_em, qa_f1))

    one_sample()
    print("STATS", runner.outputs, runner.examples, runner.kinds)
    assert runner.outputs >= MIN_OUTPUTS, (runner.outputs, runner.examples)


def test_thousands_of_queries_in_one_search_are_cut_and_counted(fuzz_setup, qwen_dir):
    """mq: 3,000 comma-separated queries: the first max_queries are searched in one request, the rest counted as
    over_limit (RAG-R1 keeps the first three; the count makes the cut visible)."""
    runner, _, tok, url = fuzz_setup
    config = verl_config(qwen_dir, f"+actor_rollout_ref.rollout.custom.rag_r1.retrieval_url={url}",
                         "+actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn=20000",
                         response_length=24000)
    agent = runner.build("rag_r1", config, tok)
    queries = ", ".join(f"query {i}" for i in range(3000))
    server = runner.server(tok, [f"<search>{queries}</search>", "<answer> Paris </answer>"], 20000)
    kwargs = sample(rag_r1_messages("Who wrote Hamlet", mode="mq"), extra_info={"rag_r1": {"mode": "mq"}})
    out = runner.run(agent.run(dict(SAMPLING), **kwargs), server)
    metrics = check_hostile_output(out, server, tok, 24000)
    assert out.extra_fields["rag_r1"]["queries"] == [["query 0", "query 1", "query 2"]]
    assert failures(out)["over_limit"] == 2997 and metrics["num_searches"] == 1
