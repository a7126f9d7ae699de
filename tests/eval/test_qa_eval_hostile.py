"""`eval qa` when the model answers hostile text on every turn: 1e999 and 10**400, NUL and control characters,
20,000-character strings, thousands of calls, 500-deep brackets and tags, `<answer>` / `<information>` imitation
inside queries, token ids that decode to invalid UTF-8, outputs cut at the token limit. The real rag_r1 loop and a
real retrieval server; the policy is a scripted engine (in-process) or a scripted OpenAI-compatible server on loopback
(through the command). Every question gets a verdict (EM, F1, its failures), and the command exits 0."""

from __future__ import annotations

import itertools
import json
import threading

from hostile_outputs import hostile_text, json_tool_calls, tag_imitations, token_ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_endpoint import JsonHandler, serving

from agentic_verl.cli import main as cli_main
from agentic_verl.eval.qa_eval import FAILURES, QAEvalSettings, evaluate

RAG_TAGS = ("<search>", "</search>", "<answer>", "</answer>", "<information>", "</information>", "<think>", "</think>")
rag_texts = st.one_of(
    hostile_text(extra=[json_tool_calls()]),
    st.builds(lambda q: f"<think>t</think><search>{q}</search>", hostile_text()),  # answer/information tags in queries
    st.builds(lambda a: f"<answer>{a}</answer>", hostile_text()),
    tag_imitations(RAG_TAGS, inner=hostile_text(max_pieces=2)),
)
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


class HostileEngine:
    """The engines' `generate`: each call answers the next scripted output (token ids), cut at max_tokens."""

    def __init__(self, outputs: list[list[int]]):
        self.outputs, self.calls, self.lock = itertools.cycle(outputs), 0, threading.Lock()

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        from agentic_verl.generation.hf_engine import GenerationOutput

        with self.lock:
            ids, self.calls = list(next(self.outputs)), self.calls + 1
        limit = int((sampling_params or {}).get("max_tokens") or 64)
        cut = len(ids) > limit
        return GenerationOutput(ids[:limit], None, "completed", "length" if cut else "stop")


def assert_every_question_has_a_verdict(result: dict, n: int) -> None:
    assert result["summary"]["n"] == len(result["questions"]) == n
    for record in result["questions"]:
        assert record["em"] in (0.0, 1.0) and 0.0 <= record["f1"] <= 1.0
        assert record["answer"] is None or isinstance(record["answer"], str)
        assert set(record["failures"]) <= set(FAILURES)
        assert record["em"] == 1.0 or record["failures"][0] in ("no_answer", "wrong_answer")


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(data=st.data())
def test_hostile_turns_in_process(toy_world_dir, toy_retrieval_url, smollm2_dir, smollm2_tokenizer, data):
    texts = data.draw(st.lists(rag_texts, min_size=6, max_size=12))
    raw = data.draw(st.lists(token_ids(smollm2_tokenizer), min_size=2, max_size=6))  # invalid UTF-8, special ids
    outputs = [smollm2_tokenizer.encode(t, add_special_tokens=False) for t in texts] + raw
    engine = HostileEngine(outputs)
    settings_ = QAEvalSettings(data=[str(toy_world_dir / "test.jsonl")], retrieval_url=toy_retrieval_url,
                               model=str(smollm2_dir), limit=6, max_turns=2, max_tokens_per_turn=64,
                               response_length=512, concurrency=3).deterministic()
    result = evaluate(settings_, engine=engine)
    assert_every_question_has_a_verdict(result, 6)
    assert engine.calls >= 6


class HostileCompletions:
    """An OpenAI-compatible /v1/models + /v1/completions on 127.0.0.1 whose every completion is the next text."""

    model_name = "hostile"

    def __init__(self, texts: list[str]):
        replies, lock, outer = itertools.cycle(texts), threading.Lock(), self
        self.requests = 0

        class Handler(JsonHandler):
            served_models = (outer.model_name,)

            def do_POST(self):  # noqa: N802 - http.server's naming
                self.read_json()
                with lock:
                    text, outer.requests = next(replies), outer.requests + 1
                self.send_json({"choices": [{"text": text, "finish_reason": "length" if len(text) > 200 else "stop"}]})

        self._serving = serving(Handler)

    def __enter__(self):
        self.url = self._serving.__enter__()
        return self

    def __exit__(self, *exc):
        self._serving.__exit__(*exc)


def _strict(constant):
    raise ValueError(f"result.json holds {constant}, which is not JSON")


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(texts=st.lists(rag_texts, min_size=8, max_size=8))
def test_hostile_endpoint_through_the_command(toy_world_dir, toy_retrieval_url, smollm2_dir, tmp_path_factory, texts):
    out = tmp_path_factory.mktemp("eval_qa_hostile")
    with HostileCompletions(texts) as server:
        code = cli_main(["eval", "qa", "--endpoint", server.url, "--model-name", server.model_name, "--tokenizer",
                         str(smollm2_dir), "--data", str(toy_world_dir / "test.jsonl"), "--data-source", "hotpotqa",
                         "--retrieval-url", toy_retrieval_url, "--limit", "4", "--max-turns", "2",
                         "--max-tokens-per-turn", "64", "--deterministic", "--out", str(out)])
    assert code == 0 and server.requests >= 4
    result = json.loads((out / "result.json").read_text(), parse_constant=_strict)
    assert_every_question_has_a_verdict(result, 4)


def test_a_loop_that_raises_is_a_counted_logged_failure(toy_world_dir, toy_retrieval_url, smollm2_dir,
                                                         smollm2_tokenizer, monkeypatch, caplog):
    """A bug of the loop on one question's output: that question is `loop_error` (logged with its traceback), the
    others are scored; a dead endpoint would instead stop the evaluation (test_qa_eval.py)."""
    import agentic_verl.agent_loops.in_process as in_process

    real = in_process.make_agent_loop
    runs = itertools.count()

    def make_agent_loop(*args, **kwargs):
        loop = real(*args, **kwargs)
        run = loop.run

        async def flaky(sampling_params, **row):
            if next(runs) == 1:
                raise KeyError("loop bug")
            return await run(sampling_params, **row)

        loop.run = flaky
        return loop

    monkeypatch.setattr(in_process, "make_agent_loop", make_agent_loop)
    engine = HostileEngine([smollm2_tokenizer.encode("<answer>x</answer>", add_special_tokens=False)])
    settings_ = QAEvalSettings(data=[str(toy_world_dir / "test.jsonl")], retrieval_url=toy_retrieval_url,
                               model=str(smollm2_dir), limit=3, max_turns=1, concurrency=1).deterministic()
    result = evaluate(settings_, engine=engine)
    assert_every_question_has_a_verdict(result, 3)
    assert result["summary"]["failures"]["loop_error"] == 1
    failed = [r for r in result["questions"] if "loop_error" in r["failures"]]
    assert failed[0]["error"] == "KeyError: 'loop bug'"
    assert any(r.exc_info and "loop bug" in str(r.exc_info[1]) for r in caplog.records)
