"""`agentic-verl eval bfcl --mode fc`: an OpenAI-compatible loopback endpoint that answers every question with the
right calls as Qwen's hermes `<tool_call>` blocks scores 1.0 in FC mode and 0 in prompting mode; the FC prompt it
receives carries the functions' schemas (rendered by the real Qwen tokenizer's chat template); hostile FC outputs
get a verdict with their failure kind, never an exception."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_verl.cli import main as cli_main
from agentic_verl.eval.bfcl_data import fc_request, load_questions
from agentic_verl.eval.bfcl_eval import BFCLEvalSettings, score_native
from agentic_verl.rewards.bfcl import decode, gold_calls, language_of, render_calls

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hostile_outputs import hostile_text, json_tool_calls, many_calls, numbers, tag_imitations  # noqa: E402
from json_endpoint import JsonHandler, serving  # noqa: E402

CATEGORIES = ("simple_python", "simple_java", "simple_javascript")
PROMPTING_MARK = "You are an expert in composing functions"  # BFCL's prompting system prompt


@pytest.fixture(scope="module")
def parser(qwen):
    from verl.experimental.agent_loop.tool_parser import ToolParser

    return ToolParser.get_tool_parser("hermes", qwen)


def gold_hermes(question: dict) -> str:
    """The question's gold calls as hermes blocks, named as the model sees the tools. Java / JavaScript values in
    their source text (the FC tools declare them strings, as BFCL's hints do): the gold calls rendered in the
    question's language and decoded back, the structure the prompting-mode checker gets."""
    language = language_of(question["category"])
    calls = gold_calls(question["possible_answer"], question["functions"])
    calls = decode(render_calls(calls, language, question["functions"]), language)
    blocks = [json.dumps({"name": name.replace(".", "_"), "arguments": arguments})
              for call in calls for name, arguments in call.items()]
    return "".join(f"<tool_call>\n{block}\n</tool_call>\n" for block in blocks)


class GoldEndpoint:
    """/v1/completions answering each question (found by its user turn in the prompt) with its gold hermes calls;
    keeps every prompt it received, decoded."""

    def __init__(self, tokenizer, questions: list[dict]):
        self.prompts: list[str] = []
        answers = {q["turns"][-1]["content"]: gold_hermes(q) for q in questions}
        outer = self

        class Handler(JsonHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                prompt = tokenizer.decode(self.read_json()["prompt"])
                outer.prompts.append(prompt)
                text = next((a for turn, a in answers.items() if turn in prompt), "no idea")
                self.send_json({"choices": [{"index": 0, "text": text, "finish_reason": "stop"}]})

        self.handler = Handler


def _run(url: str, qwen_dir: str, mode: str, out: Path) -> dict:
    args = ["eval", "bfcl", "--endpoint", url, "--model-name", "model", "--tokenizer", qwen_dir,
            "--categories", *CATEGORIES, "--limit", "3", "--mode", mode, "--out", str(out)]
    assert cli_main(args) == 0
    return json.loads((out / "result.json").read_text())


def test_gold_hermes_calls_score_1_in_fc_mode_and_0_in_prompting(qwen, qwen_dir, tmp_path, capsys):
    questions = load_questions(list(CATEGORIES), limit=3)
    endpoint = GoldEndpoint(qwen, questions)
    with serving(endpoint.handler) as url:
        fc = _run(url, qwen_dir, "fc", tmp_path / "fc")
        fc_prompts, endpoint.prompts[:] = list(endpoint.prompts), []
        prompting = _run(url, qwen_dir, "prompting", tmp_path / "prompting")
    table = capsys.readouterr().out
    for category in CATEGORIES:
        assert fc["categories"][category]["accuracy"] == 1.0, fc["categories"][category]
        assert prompting["categories"][category]["accuracy"] == 0.0
    assert fc["summary"]["calls_per_question"] == 1.0 and fc["settings"]["mode"] == "fc"
    assert "in BFCL's FC (tools through the chat template) mode" in table
    assert "in BFCL's prompting (function list in the prompt) mode" in table
    # the FC prompt: each question's functions as tool schemas in the template's <tools>, no prompting prompt
    assert len(fc_prompts) == len(questions)
    for question in questions:
        prompt = next(p for p in fc_prompts if question["turns"][-1]["content"] in p)
        assert PROMPTING_MARK not in prompt
        tools = [json.loads(line) for line in re.search(r"<tools>\n(.*?)\n</tools>", prompt, re.S)[1].splitlines()]
        schema = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
        for function in question["functions"]:
            parameters = schema[function["name"].replace(".", "_")]
            assert parameters["type"] == "object"
            assert set(parameters["properties"]) == set(function["parameters"]["properties"])
    assert all(PROMPTING_MARK in p for p in endpoint.prompts)  # prompting mode's prompt, unchanged


def test_fc_settings_refused_before_any_model_loads(qwen_dir):
    with pytest.raises(ValueError, match="FC mode has none"):
        BFCLEvalSettings(endpoint="http://127.0.0.1:9", model_name="m", mode="fc", prompt="funreason")
    with pytest.raises(ValueError, match="unknown mode"):
        BFCLEvalSettings(endpoint="http://127.0.0.1:9", model_name="m", mode="native")
    from agentic_verl.eval.bfcl_eval import evaluate

    with pytest.raises(ValueError, match="unknown tool parser 'nope'"):
        evaluate(BFCLEvalSettings(endpoint="http://127.0.0.1:9", model_name="m", tokenizer=qwen_dir, mode="fc",
                                  tool_parser="nope", categories=["simple_python"], limit=1))


def _score(questions: list[dict], texts: list[str], tokenizer, parser) -> list[dict]:
    outputs = [(text, tokenizer.encode(text, add_special_tokens=False)) for text in texts]
    return asyncio.run(score_native(questions, outputs, parser))


def test_hostile_fc_outputs_get_their_failure_kind(qwen, parser):
    question = load_questions(["simple_python"], limit=1)[0]
    name = fc_request(question)[1][0]["function"]["name"]
    gold = gold_hermes(question)
    cases = {
        "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": {\n</tool_call>": "fc:unparsed_call",  # broken JSON
        f'<tool_call>\n{{"name": "{name}", "arguments": {{"x": {"9" * 5000}}}}}\n</tool_call>': "fc:unparsed_call",
        f'<tool_call>\n{{"name": "{name}", "arguments": [1, 2]}}\n</tool_call>': "fc:arguments_not_object",
        gold * 1000: "simple_function_checker:wrong_count",  # 1000 calls
        "I would call the function.": "ast_decoder:decoder_failed",
        gold: None,
    }
    records = _score([question] * len(cases), list(cases), qwen, parser)
    assert [r["error_type"] for r in records] == list(cases.values())
    assert records[3]["calls"] == 1000 and records[0]["calls"] == 0
    irrelevance = load_questions(["irrelevance"], limit=1)[0]
    # a broken block is no call (a server's hermes parser returns none): irrelevance passes, as BFCL scores it
    assert [r["valid"] for r in _score([irrelevance] * 2, [list(cases)[0], gold], qwen, parser)] == [True, False]


HOSTILE_FC = st.one_of(
    json_tool_calls(), many_calls(1000), tag_imitations(), hostile_text(extra=[json_tool_calls()]),
    numbers().map(lambda n: f'<tool_call>\n{{"name": "f", "arguments": {{"x": {n}}}}}\n</tool_call>'),
)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(texts=st.lists(HOSTILE_FC, min_size=1, max_size=4))
def test_hostile_fc_outputs_never_raise(qwen, parser, texts):
    questions = load_questions(["simple_python", "parallel", "irrelevance", "live_relevance"], limit=1)
    picked = [questions[i % len(questions)] for i in range(len(texts))]
    for record in _score(picked, texts, qwen, parser):
        assert isinstance(record["valid"], bool) and isinstance(record["calls"], int)
        assert record["valid"] or isinstance(record["error_type"], str)
