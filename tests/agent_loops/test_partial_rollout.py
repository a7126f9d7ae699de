"""Our loops under verl's partial rollouts (the asynchronous trainer modes): verl's `FullyAsyncLLMServerClient`
resumes a generation that a weight update aborted, sending prompt + the tokens so far, until it finishes. Each loop
runs once against a scripted engine and once through that client over the same engine aborting every turn in the
middle (several times for long turns); the trajectories must be identical: token ids, masks, logprobs, the loop's
record and its trace (what the loop reads of an interrupted turn is the whole turn)."""

from __future__ import annotations

import asyncio
import json

import pytest
from agent_loop_helpers import ScriptedServer, build_loop, sample, verl_config
from omegaconf import OmegaConf
from test_bfcl_multi_turn import ENV_URL, TWO_TURNS, env, row  # noqa: F401 (env: the fake's fixture)
from test_tool_agent import QUESTION, _tool_yaml

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}


def resuming_client(engine: ScriptedServer, chunk: int, response_length: int):
    """verl's FullyAsyncLLMServerClient whose server (the base client's `generate`) is `engine`, answering each
    turn `chunk` tokens at a time with stop_reason "aborted" until the last piece, as a replica aborted by a weight
    update answers; the client resumes with the tokens so far appended to the prompt."""
    from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient, LLMServerClient
    from verl.workers.rollout.replica import TokenOutput

    class AbortingServer(LLMServerClient):
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            if self.turn is None:  # a new turn: the engine answers it whole, we hand it out in pieces
                self.turn, self.sent, self.turn_prompt = await engine.generate(
                    request_id, prompt_ids=prompt_ids, sampling_params=sampling_params), 0, list(prompt_ids)
            assert list(prompt_ids) == self.turn_prompt + list(self.turn.token_ids[:self.sent])  # resumed as sent
            end = min(self.sent + chunk, len(self.turn.token_ids))
            ids, logprobs = self.turn.token_ids[self.sent:end], (self.turn.log_probs or [])[self.sent:end]
            done = end == len(self.turn.token_ids)
            stop = self.turn.stop_reason if done else "aborted"
            self.sent, self.aborts = end, self.aborts + (not done)
            if done:
                self.turn = None
            return TokenOutput(token_ids=list(ids), log_probs=list(logprobs) or None, stop_reason=stop,
                               extra_fields={"global_steps": 7})

    class ResumingClient(FullyAsyncLLMServerClient, AbortingServer):  # FullyAsync's super().generate: ours
        pass

    client = object.__new__(ResumingClient)  # no Ray load balancer: the generate path is all we use
    client.config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"response_length": response_length}}})
    client._only_hybrid = False
    client.turn, client.sent, client.aborts = None, 0, 0
    return client


def _without_timing(extra_fields: dict) -> dict:
    fields = json.loads(json.dumps(extra_fields, default=str))
    for metrics in [fields.get("agent_metrics") or {}]:
        for key in [k for k in metrics if "latency" in k or k.endswith("_s") or "seconds" in k]:
            metrics.pop(key)
    for key in ("agent_trace_id", "min_global_steps", "max_global_steps", "num_cached_tokens"):
        fields.pop(key, None)  # a fresh id per trajectory; what verl's resuming client adds to the server's fields
    return fields


def _same_trajectory(name, config, script, tok, kwargs, monkeypatch, tools=()):
    """Run `name` plainly and through the resuming client; assert the trajectories are the same."""
    import verl.workers.rollout.llm_server as llm_server

    real_sleep = asyncio.sleep
    monkeypatch.setattr(llm_server.asyncio, "sleep", lambda delay, *a: real_sleep(0))  # verl waits 1 s a resume

    async def go(server):
        loop = build_loop(name, config, server, tok, tools=tools)
        return await loop.run(dict(SAMPLING), **kwargs())

    plain = asyncio.run(go(ScriptedServer(tok, list(script))))
    client = resuming_client(ScriptedServer(tok, list(script)), chunk=3,
                             response_length=int(config.actor_rollout_ref.rollout.response_length))
    resumed = asyncio.run(go(client))
    assert client.aborts >= len(script)  # every turn longer than 3 tokens was interrupted at least once
    assert resumed.prompt_ids == plain.prompt_ids
    assert resumed.response_ids == plain.response_ids
    assert resumed.response_mask == plain.response_mask
    assert resumed.response_logprobs == plain.response_logprobs
    assert _without_timing(resumed.extra_fields) == _without_timing(plain.extra_fields)
    return plain


def test_function_call_survives_partial_rollouts(qwen_dir, qwen_tokenizer, monkeypatch):
    from agentic_verl.agent_loops.prompts import bfcl_messages

    tok = qwen_tokenizer
    functions = [{"name": "add", "description": "Add.", "parameters": {
        "type": "dict", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]
    script = ["<think>Add one and two.</think>\n\n[add(a=1, b=2)]" + tok.eos_token]
    out = _same_trajectory("function_call", verl_config(qwen_dir), script, tok,
                           lambda: sample(bfcl_messages("1 + 2?", functions), extra_info={"functions": functions}),
                           monkeypatch)
    assert out.extra_fields["function_call"]["calls"] == [{"add": {"a": 1, "b": 2}}]


@pytest.mark.parametrize("format", ["prompting", "native"])
def test_bfcl_multi_turn_survives_partial_rollouts(format, qwen_dir, qwen_tokenizer, env, monkeypatch):  # noqa: F811
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    ls = '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>' if format == "native" else "[ls()]"
    script = [ls + eos, "Two entries in the folder." + eos, ls + eos, "Still two." + eos]
    custom = "+actor_rollout_ref.rollout.custom.bfcl_multi_turn"
    config = verl_config(qwen_dir, f"{custom}.env_url={ENV_URL}", f"{custom}.format={format}",
                         prompt_length=2048, response_length=1024)
    prompt, extra_info = row(TWO_TURNS)
    out = _same_trajectory("bfcl_multi_turn", config, script, tok,
                           lambda: sample(prompt, extra_info=dict(extra_info)), monkeypatch)
    assert out.extra_fields["bfcl_multi_turn"]["model_calls"] == [[[{"name": "ls", "arguments": {}}]],
                                                                  [[{"name": "ls", "arguments": {}}]]]


def test_rag_r1_survives_partial_rollouts(qwen_dir, qwen_tokenizer, retrieval_server, monkeypatch):
    tok = qwen_tokenizer
    custom = "+actor_rollout_ref.rollout.custom.rag_r1"
    config = verl_config(qwen_dir, f"{custom}.retrieval_url={retrieval_server.url}", f"{custom}.mode=sq")
    script = ["<think>Look it up.</think><search>capital of france</search>",
              "<think>Found.</think><answer>Paris</answer>" + tok.eos_token]
    out = _same_trajectory("rag_r1", config, script, tok,
                           lambda: sample([{"role": "user", "content": "Capital of France?"}]), monkeypatch)
    assert out.extra_fields["rag_r1"]["answer"].strip() == "Paris"


def test_tool_agent_traced_survives_partial_rollouts(qwen_dir, qwen_tokenizer, retrieval_server, tmp_path,
                                                     monkeypatch):
    from verl.tools.tool_registry import load_all_tools

    tok = qwen_tokenizer
    monkeypatch.setenv("RETRIEVAL_URL", retrieval_server.url)
    tools = load_all_tools(tool_config_path=_tool_yaml(tmp_path, retrieval_server.url), function_tool_path=None)
    config = verl_config(qwen_dir, "actor_rollout_ref.rollout.multi_turn.format=hermes")
    call = '<tool_call>\n{"name": "search", "arguments": {"query_list": ["capital of france"]}}\n</tool_call>'
    script = [call + tok.eos_token, "Paris." + tok.eos_token]
    out = _same_trajectory("tool_agent_traced", config, script, tok, lambda: sample(QUESTION), monkeypatch,
                           tools=tools)
    assert out.extra_fields["agent_metrics"]["num_tool_calls"] == 1
