"""rag_r1: the RAG-R1 tag protocol, constructed as verl constructs agent loops, against a real retrieval server
on loopback; scripted token streams (real Qwen/SmolLM2 tokenizers and chat templates) for exact protocol checks
and malformed output, and SmolLM2-135M through verl's AgentLoopWorker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from agent_loop_helpers import EngineServer, ScriptedServer, run, run_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants, observation_texts, policy_text

from agentic_verl.agent_loops.prompts import rag_r1_messages
from agentic_verl.agent_loops.rag_r1 import INVALID_ACTION_OBSERVATION, RagR1Config, parse_action, split_queries
from agentic_verl.rewards.qa import extract_answer, qa_em

REPO = Path(__file__).resolve().parents[2]
SAMPLING = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
QUESTION = "Who wrote Hamlet"


def _rag_config(model_dir, url, response_length=512, **fields):
    fields = {"retrieval_url": url, "retrieval_max_retries": 0, "retrieval_timeout_s": 2.0, **fields}
    overrides = [f"+actor_rollout_ref.rollout.custom.rag_r1.{k}={v}" for k, v in fields.items()]
    return verl_config(model_dir, *overrides, response_length=response_length)


def _run(config, server, tokenizer, mode="mq", extra_info=None, question=QUESTION):
    kwargs = sample(rag_r1_messages(question, mode=mode), extra_info=extra_info or {})
    return run_loop("rag_r1", config, server, tokenizer, SAMPLING, kwargs)


@pytest.mark.parametrize("which", ["qwen", "smol"])
def test_mq_search_then_answer_one_request_and_exact_observation(which, request, retrieval_server):
    model_dir, tok = request.getfixturevalue(f"{which}_dir"), request.getfixturevalue(f"{which}_tokenizer")
    server = ScriptedServer(tok, [
        "<think>I need two facts.</think>\n<search> who wrote hamlet, capital of france </search>\nJUNK after stop",
        "<think>Found it.</think>\n<answer> William Shakespeare </answer>" + tok.eos_token,
    ])
    calls_before = len(retrieval_server.service.calls)
    out = _run(_rag_config(model_dir, retrieval_server.url), server, tok)

    # all queries of the turn in ONE retrieval request, top-3 each
    assert retrieval_server.service.calls[calls_before:] == [["who wrote hamlet", "capital of france"]]
    # the prompt is the real chat template with the RAG-R1 instruction
    assert out.prompt_ids == tok.apply_chat_template(rag_r1_messages(QUESTION), add_generation_prompt=True,
                                                     tokenize=True, return_dict=False)
    # generation is asked to stop at the tags, and the loop cut the stream itself (the server ignored them)
    assert server.calls[0]["sampling_params"]["stop"] == ["</search>", "</answer>"]
    text = policy_text(out, tok)
    assert "JUNK" not in text and "\n<answer> William Shakespeare </answer>" in text
    first_turn = tok.decode(server.outputs[0].token_ids[: out.response_mask.index(0)])
    assert first_turn.rstrip("\n").endswith("</search>")
    # the observation: \n<information>\n + RAG-R1 mq JSON of per-query "Doc i: ..." blocks + \n</information>\n
    [obs] = observation_texts(out, tok)
    assert obs.startswith("\n<information>\n") and obs.endswith("\n</information>\n")
    body = json.loads(obs[len("\n<information>\n"): -len("\n</information>\n")])
    assert body["query"] == ["who wrote hamlet", "capital of france"]
    assert len(body["documents"]) == 2
    assert body["documents"][0].startswith("Doc 1: Hamlet\nHamlet is a tragedy")
    assert "Doc 1: Paris\n" in body["documents"][1] or "Doc 1: France\n" in body["documents"][1]
    assert all(1 <= block.count("Doc ") <= 3 for block in body["documents"])  # bm25 returns matching docs only
    check_token_invariants(out, server, tok, observations=[obs])
    assert out.response_logprobs is not None

    info = out.extra_fields["rag_r1"]
    assert info["answer"] == "William Shakespeare" and info["queries"] == [["who wrote hamlet", "capital of france"]]
    metrics = out.extra_fields["agent_metrics"]
    assert metrics["num_searches"] == 1 and metrics["queries_per_search"] == 2
    assert sum(v for k, v in metrics.items() if k.startswith("failure/")) == 0
    assert out.extra_fields["global_steps"] == 7
    assert qa_em(tok.decode(out.response_ids, skip_special_tokens=True), ["William Shakespeare"])["score"] == 1.0


def test_sq_mode_is_config_only_and_keeps_commas(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    server = ScriptedServer(tok, ["<search> capital of france, paris </search>", "<answer> Paris </answer>"])
    before = len(retrieval_server.service.calls)
    out = _run(_rag_config(qwen_dir, retrieval_server.url), server, tok, mode="sq",
               extra_info={"rag_r1": {"mode": "sq"}})
    assert retrieval_server.service.calls[before:] == [["capital of france, paris"]]
    [obs] = observation_texts(out, tok)
    assert obs.startswith("\n<information>\nDoc 1: Paris\n") and "\nDoc 2: France\n" in obs and "\"query\"" not in obs
    check_token_invariants(out, server, tok, observations=[obs])
    assert out.extra_fields["rag_r1"]["mode"] == "sq"


def test_answer_inside_a_retrieved_document_is_never_rewarded(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    # the retrieved "Answer key" page contains <answer> Stratford </answer>; the policy never answers
    server = ScriptedServer(tok, ["<search> quiz answer key </search>", "I am not sure.<|im_end|>"])
    out = _run(_rag_config(qwen_dir, retrieval_server.url, max_turns=1), server, tok)
    [obs] = observation_texts(out, tok)
    assert "&lt;answer&gt; Stratford &lt;/answer&gt;" in obs and "<answer>" not in obs
    response_text = tok.decode(out.response_ids, skip_special_tokens=True)
    assert extract_answer(response_text) is None
    assert qa_em(response_text, ["Stratford"])["score"] == 0.0
    assert out.extra_fields["rag_r1"]["answer"] is None


def test_server_that_honours_stop_strings_gives_the_same_trajectory(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    script = ["<search> capital of france </search> and then more", "<answer> Paris </answer> trailing"]
    config = _rag_config(qwen_dir, retrieval_server.url)
    ignoring, honouring = ScriptedServer(tok, list(script)), ScriptedServer(tok, list(script), honor_stop=True)
    a, b = _run(config, ignoring, tok), _run(config, honouring, tok)
    assert a.response_ids == b.response_ids and a.response_mask == b.response_mask
    assert len(honouring.outputs[0].token_ids) < len(ignoring.outputs[0].token_ids)  # the server did stop early
    check_token_invariants(b, honouring, tok)


def test_max_turns_then_one_final_turn_without_search(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    notice = "\nNo more searches: answer now.\n"
    server = ScriptedServer(tok, ["<search> nile river </search>", "<search> everest </search>", "never asked"])
    before = len(retrieval_server.service.calls)
    out = _run(_rag_config(qwen_dir, retrieval_server.url, max_turns=1), server, tok,
               extra_info={"rag_r1": {"final_turn_notice": notice}})
    assert retrieval_server.service.calls[before:] == [["nile river"]]  # the final turn's search is not executed
    assert len(server.calls) == 2
    obs = observation_texts(out, tok)
    assert obs[0].startswith("\n<information>\n") and obs[0].endswith("\n</information>\n" + notice)
    assert out.extra_fields["rag_r1"]["searches_after_budget"] == 1
    check_token_invariants(out, server, tok)


def _failure_counts(out) -> dict[str, float]:
    return {k.split("/", 1)[1]: v for k, v in out.extra_fields["agent_metrics"].items() if k.startswith("failure/") and v}


# one row per malformed case: script, config fields, the failure counts it must produce
MALFORMED = [
    # neither tag, twice (max_turns=1 + the final turn): the fixed invalid-action observation once
    ("no_tags", ["The answer is Paris.<|im_end|>", "Still Paris.<|im_end|>"], {}, {"no_call": 2}),
    # an unclosed <search>, then an answer
    ("unclosed", ["<search> capital of france<|im_end|>", "<answer> Paris </answer>"], {}, {"parse_error": 1}),
    # a <search> closed by </answer>
    ("mismatched", ["<search> capital of france </answer>", "<answer> Paris </answer>"], {}, {"parse_error": 1}),
    # an empty query
    ("empty_query", ["<search>  ,  </search>", "<answer> Paris </answer>"], {}, {"bad_arguments": 1}),
    # the server returns no tokens at all
    ("empty_output", [[], "<answer> Paris </answer>"], {}, {"no_call": 1}),
    # a turn that hits max_tokens_per_turn without a tag
    ("turn_length", ["word " * 40, "<answer> Paris </answer>"], {"max_tokens_per_turn": 16}, {"truncated_by_length": 1}),
    # the whole response budget runs out
    ("budget", ["<search> nile </search>", "word " * 400], {"max_turns": 3}, {"truncated_by_length": 1}),
    # mq: five queries where the prompt allows three: the first three are searched, two are counted as cut
    ("too_many_queries", ["<search> nile, paris, hamlet, everest, france </search>", "<answer> Paris </answer>"],
     {}, {"over_limit": 2}),
]


@pytest.mark.parametrize("name,script,fields,expected", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_outputs_land_in_their_failure_category(name, script, fields, expected, qwen_dir, qwen_tokenizer,
                                                          retrieval_server):
    tok = qwen_tokenizer
    fields = {"max_turns": 1, **fields}
    server = ScriptedServer(tok, script)
    out = _run(_rag_config(qwen_dir, retrieval_server.url, response_length=256, **fields), server, tok)
    assert _failure_counts(out) == expected
    check_token_invariants(out, server, tok)
    assert len(out.response_ids) <= 256
    if name in ("no_tags", "unclosed", "mismatched", "empty_query", "empty_output"):
        assert INVALID_ACTION_OBSERVATION in observation_texts(out, tok)


@pytest.mark.parametrize("fixture,category", [("silent_server", "timeout"), ("dead_url", "tool_error")])
def test_retrieval_timeout_or_down_is_an_observation_not_a_crash(fixture, category, request, qwen_dir,
                                                                   qwen_tokenizer):
    tok = qwen_tokenizer
    url = request.getfixturevalue(fixture)
    server = ScriptedServer(tok, ["<search> capital of france </search>", "<answer> Paris </answer>"])
    out = _run(_rag_config(qwen_dir, url, retrieval_timeout_s=0.3), server, tok)
    assert _failure_counts(out) == {category: 1}
    [obs] = observation_texts(out, tok)
    assert obs.startswith("\n<information>\nSearch failed (") and obs.endswith("\n</information>\n")
    assert out.extra_fields["rag_r1"]["answer"] == "Paris"
    check_token_invariants(out, server, tok, observations=[obs])


def test_logprobs_only_when_the_server_gives_them(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    script = ["<search> paris </search>", "<answer> Paris </answer>"]
    config = _rag_config(qwen_dir, retrieval_server.url)
    without = _run(config, ScriptedServer(tok, list(script), logprobs=False), tok)
    assert without.response_logprobs is None
    with_server = ScriptedServer(tok, list(script))
    out = _run(config, with_server, tok)
    assert len(out.response_logprobs) == len(out.response_ids)
    check_token_invariants(out, with_server, tok)


def test_observation_documents_are_cut_to_max_obs_length_tokens(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    server = ScriptedServer(tok, ["<search> hamlet, paris </search>", "<answer> x </answer>"])
    out = _run(_rag_config(qwen_dir, retrieval_server.url, max_obs_length=8), server, tok)
    [obs] = observation_texts(out, tok)
    body = json.loads(obs[len("\n<information>\n"): -len("\n</information>\n")])
    assert all(len(tok.encode(block, add_special_tokens=False)) <= 8 for block in body["documents"])
    assert all(block.startswith("Doc 1: ") for block in body["documents"])


def test_config_layers_and_unknown_keys(qwen_dir, qwen_tokenizer, retrieval_server):
    tok = qwen_tokenizer
    config = _rag_config(qwen_dir, retrieval_server.url, topk=1)
    with pytest.raises(ValueError, match="unknown RagR1Config key"):
        run_loop("rag_r1", config, ScriptedServer(tok, []), tok, SAMPLING,
                 sample(rag_r1_messages("q"), extra_info={"rag_r1": {"top_k": 2}}))
    with pytest.raises(ValueError, match="unknown rag_r1 mode"):
        RagR1Config(mode="xq")
    # rollout.custom says topk=1, the sample says topk=2: the sample wins
    server = ScriptedServer(tok, ["<search> paris </search>", "<answer> Paris </answer>"])
    out = _run(config, server, tok, extra_info={"rag_r1": {"topk": 2}})
    [obs] = observation_texts(out, tok)
    [block] = json.loads(obs[len("\n<information>\n"): -len("\n</information>\n")])["documents"]
    assert block.count("Doc ") == 2


def test_parsing_helpers():
    assert parse_action("<think>a</think><answer> x </answer>") == ("answer", "x")
    assert parse_action("<search>a</answer>") == (None, "")
    assert split_queries("a, b, c, d", "mq", 2) == ["a", "b"]
    assert split_queries(" ", "sq", 3) == []


def test_smollm2_through_verl_agent_loop_worker(smol_dir, smol_tokenizer, smol_engine, retrieval_server,
                                                  monkeypatch):
    """SmolLM2-135M generates for real; verl's AgentLoopWorker picks the loop per sample from agent_name via our
    agent-loop YAML, runs it, pads, and builds the batch. Checked on the padded batch: the mask is 1 exactly on
    tokens the model generated, every generate call saw prompt + response so far, observations decode to
    RAG-R1 observations."""
    import os

    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto

    import agentic_verl.agent_loops as agent_loops_pkg

    monkeypatch.setenv("AGENTIC_VERL_RETRIEVAL_URL", retrieval_server.url)
    yaml_path = os.path.join(os.path.dirname(agent_loops_pkg.__file__), "configs", "agent_loops.yaml")
    response_length = 96
    config = verl_config(smol_dir, f"actor_rollout_ref.rollout.agent.agent_loop_config_path={yaml_path}",
                         "+actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn=24",
                         "+actor_rollout_ref.rollout.custom.rag_r1.max_turns=1",
                         prompt_length=384, response_length=response_length)
    server = EngineServer(smol_engine)
    worker = AgentLoopWorker(config, server)
    questions = ["What is the capital of France", "Who wrote Hamlet"]
    batch = DataProto.from_dict(non_tensors={
        "raw_prompt": np.array([rag_r1_messages(q) for q in questions] + [None], dtype=object)[:2],
        "agent_name": np.array(["rag_r1_mq", "rag_r1_sq"], dtype=object),
        "extra_info": np.array([{}, {}], dtype=object),
        "index": np.array([0, 1]),
    })
    result = run(worker.generate_sequences(batch))

    tok = smol_tokenizer
    assert result.batch["responses"].shape == (2, response_length)
    for row in range(2):
        prompt = result.batch["prompts"][row]
        attention = result.batch["attention_mask"][row]
        prompt_ids = prompt[attention[: prompt.shape[0]].bool()].tolist()
        n = int(attention[prompt.shape[0]:].sum())
        response = result.batch["responses"][row][:n].tolist()
        mask = result.batch["response_mask"][row][:n].tolist()
        assert result.batch["response_mask"][row][n:].sum() == 0
        assert prompt_ids == tok.apply_chat_template(rag_r1_messages(questions[row]), add_generation_prompt=True,
                                                     tokenize=True, return_dict=False)
        # every model call saw exactly prompt + the response so far, and its tokens are in the response as is
        own_calls = [c for c in server.calls if c["prompt_ids"][: len(prompt_ids)] == prompt_ids]
        assert own_calls, "no generate call for this sample"
        covered = set()
        for call in own_calls:
            start = len(call["prompt_ids"]) - len(prompt_ids)
            assert call["prompt_ids"] == prompt_ids + response[:start]
            assert start == 0 or mask[start - 1] == 0  # a turn starts after the prompt or an observation
            end = start
            while end < n and mask[end] == 1:
                end += 1
            generated = server.outputs[server.calls.index(call)].token_ids
            assert response[start:end] == generated[: end - start]  # kept as generated (possibly cut at a tag)
            covered.update(range(start, end))
        assert covered == {i for i in range(n) if mask[i] == 1}  # mask is 1 exactly on generated tokens
        # mask-0 runs are RAG-R1 observations (the last one may be cut by response_length)
        for obs in _zero_runs(response, mask, tok):
            full = obs.startswith("\n<information>\n") or obs == INVALID_ACTION_OBSERVATION
            assert full or (n == response_length and INVALID_ACTION_OBSERVATION.startswith(obs)), obs
        assert result.non_tensor_batch["agent_metrics"][row]["num_turns"] >= 1
    assert [info["mode"] for info in result.non_tensor_batch["rag_r1"]] == ["mq", "sq"]


def _zero_runs(ids, mask, tok):
    out, start = [], None
    for i, m in enumerate(mask + [1]):
        if m == 0 and start is None:
            start = i
        elif m == 1 and start is not None:
            out.append(tok.decode(ids[start:i], skip_special_tokens=False))
            start = None
    return out


def test_shipped_agent_loop_yaml_builds_both_variants(qwen_dir, qwen_tokenizer, monkeypatch):
    """agentic_verl/agent_loops/configs/agent_loops.yaml, read as AgentLoopWorker reads it (OmegaConf.load, each
    entry instantiated by hydra with verl's arguments), resolves the env interpolation and yields sq and mq loops."""
    import asyncio
    import os

    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    import agentic_verl.agent_loops as package

    monkeypatch.setenv("AGENTIC_VERL_RETRIEVAL_URL", "http://127.0.0.1:9")
    entries = OmegaConf.load(os.path.join(os.path.dirname(package.__file__), "configs", "agent_loops.yaml"))
    config = verl_config(qwen_dir)

    async def build(entry):
        return hydra.utils.instantiate(entry, trainer_config=DictConfigWrap(config), server_manager=None,
                                       tokenizer=qwen_tokenizer, processor=None, hf_model_type="qwen2",
                                       dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                       tools=ToolListWrap([]))

    loops = {entry.name: asyncio.run(build(entry)) for entry in entries}
    assert set(loops) == {"rag_r1_sq", "rag_r1_mq"}
    assert loops["rag_r1_sq"]._loop_kwargs["mode"] == "sq" and loops["rag_r1_mq"]._loop_kwargs["mode"] == "mq"
    assert loops["rag_r1_mq"]._loop_kwargs["retrieval_url"] == "http://127.0.0.1:9"
    assert loops["rag_r1_sq"].agent_name == "rag_r1_sq"
    for loop in loops.values():
        RagR1Config(**loop._loop_kwargs)  # every key is a config field with a valid value


def test_trajectory_dump_through_trace(qwen_dir, qwen_tokenizer, retrieval_server, tmp_path, monkeypatch):
    """With AGENTIC_VERL_TRAJECTORY_DIR set, the loop's trace writes one JSONL record whose segments are the
    policy turns and the observation, in order."""
    from agentic_verl.agent_loops.trace import TRAJECTORY_DIR_ENV, dump_path

    monkeypatch.setenv(TRAJECTORY_DIR_ENV, str(tmp_path))
    tok = qwen_tokenizer
    server = ScriptedServer(tok, ["<search> paris </search>", "<answer> Paris </answer>"])
    out = _run(_rag_config(qwen_dir, retrieval_server.url), server, tok)
    [record] = [json.loads(line) for line in open(dump_path(str(tmp_path)))]
    assert record["agent_name"] == "rag_r1" and record["request_id"] == out.extra_fields["agent_trace_id"]
    assert [s["policy"] for s in record["response_segments"]] == [True, False, True]
    assert record["response_segments"][1]["text"] == observation_texts(out, tok)[0]
    assert [t["tool_calls"][0]["arguments"] for t in record["turns"][:1]] == [{"queries": ["paris"]}]


@pytest.mark.parametrize("final_turn,reward", [
    ("I am not sure.<|im_end|>", 0.0),  # only the retrieved page says <answer> Stratford </answer>
    ("<answer> Stratford </answer>", 1.0),  # the policy says it
])
def test_verls_reward_manager_scores_only_the_policys_answer(final_turn, reward, qwen_dir, retrieval_server):
    """AgentLoopWorker output -> verl's NaiveRewardManager with reward_fns/qa_em.py, as the trainer does."""
    import asyncio
    import importlib.util

    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.protocol import DataProto

    spec = importlib.util.spec_from_file_location("qa_em_entry", REPO / "reward_fns" / "qa_em.py")
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)

    config = _rag_config(qwen_dir, retrieval_server.url, max_turns=1)
    async def go():
        worker = AgentLoopWorker(config, ScriptedServer(worker_tokenizer(config), [
            "<search> quiz answer key </search>", final_turn]))
        raw_prompt = np.empty(1, dtype=object)
        raw_prompt[0] = rag_r1_messages("Where was Shakespeare born")
        batch = DataProto.from_dict(non_tensors={
            "raw_prompt": raw_prompt, "agent_name": np.array(["rag_r1"], dtype=object),
            "data_source": np.array(["test"], dtype=object), "index": np.array([0]),
            "reward_model": np.array([{"ground_truth": {"target": ["Stratford"]}}], dtype=object),
            "extra_info": np.array([{}], dtype=object)})
        result = await worker.generate_sequences(batch)
        manager = NaiveRewardManager(config, worker.tokenizer, entry.compute_score)
        return await manager.run_single(result)

    scored = asyncio.run(go())
    assert scored["reward_score"] == reward


def worker_tokenizer(config):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(config.actor_rollout_ref.model.path)


# -- one source of truth for the mode -----------------------------------------------------------------
def _loop_with_kwargs(config, server, tok, **loop_kwargs):
    """The loop as AgentLoopWorker builds an entry of agent_loop_config_path (its keys next to _target_)."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    entry = {"_target_": "agentic_verl.agent_loops.rag_r1.RagR1AgentLoop", "name": "rag_r1_test", **loop_kwargs}
    return hydra.utils.instantiate(entry, trainer_config=DictConfigWrap(config), server_manager=server,
                                   tokenizer=tok, processor=None, hf_model_type="qwen2", dataset_cls=RLHFDataset,
                                   data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))


@pytest.mark.parametrize("where", ["rollout.custom", "agent loop config"])
def test_a_run_level_mode_that_disagrees_with_the_rows_mode_raises(where, qwen_dir, qwen_tokenizer,
                                                                    retrieval_server):
    """The data decides the mode (its prompts were written for it): a run-level mq against a row written for sq
    is an error naming both and how to fix it, whichever run-level layer sets it; nothing is generated."""
    import asyncio

    tok = qwen_tokenizer
    server = ScriptedServer(tok, ["<search> paris </search>", "<answer> Paris </answer>"])
    row = sample(rag_r1_messages(QUESTION, mode="sq"), extra_info={"rag_r1": {"mode": "sq"}})
    if where == "rollout.custom":
        with pytest.raises(ValueError, match=r"rag_r1\.mode disagrees: the run sets 'mq' \(rollout\.custom\.rag_r1\)"
                                             r".*extra_info\.rag_r1\.mode is 'sq'.*--mode"):
            run_loop("rag_r1", _rag_config(qwen_dir, retrieval_server.url, mode="mq"), server, tok, SAMPLING, row)
    else:
        async def go():
            loop = _loop_with_kwargs(_rag_config(qwen_dir, retrieval_server.url), server, tok, mode="mq")
            return await loop.run(dict(SAMPLING), **row)

        with pytest.raises(ValueError, match=r"the run sets 'mq' \(agent loop config\).*is 'sq'"):
            asyncio.run(go())
    assert server.calls == []


@pytest.mark.parametrize("run_mode,row_mode,expected", [
    ("sq", "sq", "sq"),  # both set, equal
    (None, "sq", "sq"),  # only the row: a run that sets no mode
    ("sq", None, "sq"),  # only the run (rows without extra_info.rag_r1)
])
def test_mode_from_the_run_or_the_row_when_they_agree(run_mode, row_mode, expected, qwen_dir, qwen_tokenizer,
                                                      retrieval_server):
    tok = qwen_tokenizer
    server = ScriptedServer(tok, ["<search> capital of france, paris </search>", "<answer> Paris </answer>"])
    fields = {"mode": run_mode} if run_mode else {}
    extra_info = {"rag_r1": {"mode": row_mode}} if row_mode else {}
    before = len(retrieval_server.service.calls)
    out = _run(_rag_config(qwen_dir, retrieval_server.url, **fields), server, tok, mode=expected,
               extra_info=extra_info)
    assert out.extra_fields["rag_r1"]["mode"] == expected
    assert retrieval_server.service.calls[before:] == [["capital of france, paris"]]  # sq: one query, commas kept


# -- fail-fast on a dead retrieval server ---------------------------------------------------------------
@pytest.fixture()
def fresh_fail_fast_state():
    from agentic_verl.agent_loops.rag_r1 import SEARCH_FAILURES

    SEARCH_FAILURES.clear()
    yield SEARCH_FAILURES
    SEARCH_FAILURES.clear()


def test_dead_server_stops_after_max_consecutive_search_failures(fresh_fail_fast_state, dead_url, qwen_dir,
                                                                 qwen_tokenizer):
    """Searches against a server that is down: the first failure is an observation (failure/tool_error, the run
    goes on); the second in a row (max_consecutive_search_failures=2, across trajectories of this process)
    raises SearchFailFastError naming the server; every later trajectory raises before generating anything."""
    from agentic_verl.agent_loops.rag_r1 import SearchFailFastError

    tok = qwen_tokenizer
    config = _rag_config(qwen_dir, dead_url, max_consecutive_search_failures=2)
    script = ["<search> capital of france </search>", "<answer> Paris </answer>"]

    first = _run(config, ScriptedServer(tok, list(script)), tok)
    assert _failure_counts(first) == {"tool_error": 1}
    assert first.extra_fields["agent_metrics"]["failed_tool_calls"] == 1
    assert first.extra_fields["rag_r1"]["answer"] == "Paris"
    assert fresh_fail_fast_state.count(dead_url) == 1

    with pytest.raises(SearchFailFastError, match=r"2 consecutive searches failed.*cannot reach "
                                                  rf"{dead_url}/retrieve.*{dead_url}/health"):
        _run(config, ScriptedServer(tok, list(script)), tok)

    later = ScriptedServer(tok, list(script))
    with pytest.raises(SearchFailFastError, match="max_consecutive_search_failures=2"):
        _run(config, later, tok)
    assert later.calls == []  # stopped before generating


def test_rag_r1_loop_and_search_tool_share_one_streak_per_server(fresh_fail_fast_state, dead_url, qwen_dir,
                                                                  qwen_tokenizer):
    """A process that runs both the rag_r1 loop and SearchTool (tool_agent_traced) against one dead server stops at
    the limit counted over both: one failure through the tool and one through the loop trip max=2."""
    import asyncio

    from agentic_verl.agent_loops.rag_r1 import SearchFailFastError
    from agentic_verl.tools.search import SearchTool

    tool_config = {"type": "native", "retrieval_url": dead_url, "max_retries": 0,
                   "max_consecutive_search_failures": 2}
    tool = SearchTool(tool_config)

    async def one_search():
        instance_id, _ = await tool.create()
        try:
            return await tool.execute(instance_id, {"query_list": ["anything"]})
        finally:
            await tool.release(instance_id)

    _, _, metrics = asyncio.run(one_search())
    assert metrics["error_type"] == "server_error" and fresh_fail_fast_state.count(dead_url) == 1

    tok = qwen_tokenizer
    config = _rag_config(qwen_dir, dead_url, max_consecutive_search_failures=2)
    with pytest.raises(SearchFailFastError, match="2 consecutive searches failed"):
        _run(config, ScriptedServer(tok, ["<search> capital of france </search>", "<answer> Paris </answer>"]), tok)


def test_fail_fast_counts_only_consecutive_failures_and_zero_never_stops(fresh_fail_fast_state, dead_url, qwen_dir,
                                                                         qwen_tokenizer, retrieval_server):
    """An answer from the server resets the streak (same URL: a server that came back), and 0 turns it off."""
    from agentic_verl.agent_loops.rag_r1 import RagR1Config

    tok = qwen_tokenizer
    script = ["<search> capital of france </search>", "<answer> Paris </answer>"]
    never = _rag_config(qwen_dir, dead_url, max_consecutive_search_failures=0)
    for _ in range(3):
        assert _failure_counts(_run(never, ScriptedServer(tok, list(script)), tok)) == {"tool_error": 1}
    assert fresh_fail_fast_state.count(dead_url) == 3

    fresh_fail_fast_state.failed(retrieval_server.url, 2, str)  # one failure of the live server's URL...
    live = _rag_config(qwen_dir, retrieval_server.url, max_consecutive_search_failures=2)
    assert _failure_counts(_run(live, ScriptedServer(tok, list(script)), tok)) == {}
    assert fresh_fail_fast_state.count(retrieval_server.url) == 0  # ...forgotten after its answer
    with pytest.raises(ValueError, match="max_consecutive_search_failures must be >= 0"):
        RagR1Config(max_consecutive_search_failures=-1)


def test_a_trajectory_that_ends_after_the_fail_fast_tripped_is_not_returned(fresh_fail_fast_state, qwen_dir,
                                                                             qwen_tokenizer, retrieval_server):
    """Another trajectory of the process reaches the limit while this one is generating (here: during its second
    generation): this one's own search succeeded, but it raises at its end instead of becoming a training sample."""
    from agentic_verl.agent_loops.rag_r1 import SearchFailFastError

    tok = qwen_tokenizer
    url = retrieval_server.url

    class TripsDuringSecondTurn(ScriptedServer):
        async def generate(self, request_id, **kwargs):
            if len(self.calls) == 1:
                with pytest.raises(SearchFailFastError):
                    fresh_fail_fast_state.failed(url, 1, lambda n: "the server died (another trajectory)")
            return await super().generate(request_id, **kwargs)

    server = TripsDuringSecondTurn(tok, ["<search> paris </search>", "<answer> Paris </answer>"])
    with pytest.raises(SearchFailFastError, match=r"the server died \(another trajectory\)"):
        _run(_rag_config(qwen_dir, url, max_consecutive_search_failures=1), server, tok)
    assert len(server.calls) == 2  # it ran to its end


def test_protocol_doctests():
    import doctest

    from agentic_verl.agent_loops import rag_r1_protocol

    result = doctest.testmod(rag_r1_protocol)
    assert result.attempted >= 3 and result.failed == 0
