"""HFGenerationEngine against transformers itself: greedy tokens, log-probs, stops, batching, weights."""

from __future__ import annotations

import asyncio

import pytest
import torch

from agentic_verl.generation.hf_engine import GenerationOutput, HFGenerationEngine, SamplingParams

# Prompts of different lengths, so batches need left padding.
PROMPTS = [[9707, 11, 1879, 0, 358], [40, 1079], [785, 6722, 315, 9625, 374, 12095, 13, 576], [1]]


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return HFGenerationEngine(tiny_model_dir, tiny_model_dir, dtype="float32", max_batch_size=8, seed=0)


@pytest.fixture(scope="module")
def reference(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32, attn_implementation="sdpa").eval()


def _run(*coros):
    async def main():
        return await asyncio.gather(*coros)

    return asyncio.run(main())


GREEDY = {"temperature": 0, "max_tokens": 10, "ignore_eos": True}


def test_greedy_equals_transformers_generate(engine, reference):
    for prompt in PROMPTS:
        (out,) = _run(engine.generate(prompt, GREEDY))
        expected = reference.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                      max_new_tokens=10, do_sample=False, eos_token_id=None, pad_token_id=0)
        assert out.token_ids == expected[0, len(prompt):].tolist()
        assert out.finish_reason == "length" and out.stop_reason == "completed"


def test_logprobs_match_a_full_forward_pass(engine, reference):
    for params in (GREEDY, {"temperature": 0.7, "max_tokens": 10, "ignore_eos": True}):
        outs = _run(*[engine.generate(p, params) for p in PROMPTS])
        temperature = params["temperature"] or 1.0
        for prompt, out in zip(PROMPTS, outs, strict=True):
            with torch.no_grad():
                logits = reference(torch.tensor([prompt + out.token_ids])).logits[0].float() / temperature
            expected = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1].gather(-1, torch.tensor(out.token_ids)[:, None])
            assert len(out.log_probs) == len(out.token_ids) == 10
            assert torch.allclose(torch.tensor(out.log_probs), expected.flatten(), atol=1e-4)


def test_concurrent_requests_of_different_lengths_batch_to_the_same_tokens(engine):
    one_by_one = [_run(engine.generate(p, GREEDY))[0].token_ids for p in PROMPTS]
    calls = []
    original = engine._decode
    engine._decode = lambda batch: (calls.append(len(batch)), original(batch))[1]
    try:
        together = _run(*[engine.generate(p, GREEDY) for p in PROMPTS])
    finally:
        engine._decode = original
    assert calls == [len(PROMPTS)]  # one batch, not four
    assert [o.token_ids for o in together] == one_by_one


def test_mixed_budgets_retire_rows_early_without_disturbing_the_rest(engine):
    budgets = [3, 10, 1, 6]
    alone = [_run(engine.generate(p, {**GREEDY, "max_tokens": b}))[0].token_ids for p, b in zip(PROMPTS, budgets, strict=True)]
    together = _run(*[engine.generate(p, {**GREEDY, "max_tokens": b}) for p, b in zip(PROMPTS, budgets, strict=True)])
    assert [len(o.token_ids) for o in together] == budgets
    assert [o.token_ids for o in together] == alone


def test_stops_at_eos_and_at_request_stop_token_ids(engine):
    (free,) = _run(engine.generate(PROMPTS[0], GREEDY))
    stop_token = free.token_ids[3]
    first = free.token_ids.index(stop_token)  # it may occur earlier too
    (stopped,) = _run(engine.generate(PROMPTS[0], {**GREEDY, "stop_token_ids": [stop_token]}))
    assert stopped.token_ids == free.token_ids[: first + 1]  # the stop token is returned, as vLLM does
    assert stopped.finish_reason == "stop" and len(stopped.log_probs) == first + 1

    # EOS: make the first greedy token an EOS id and it stops there unless ignore_eos
    engine.eos_token_ids.append(free.token_ids[0])
    try:
        (eos,) = _run(engine.generate(PROMPTS[0], {"temperature": 0, "max_tokens": 10}))
        (ignored,) = _run(engine.generate(PROMPTS[0], GREEDY))
    finally:
        engine.eos_token_ids.pop()
    assert eos.token_ids == free.token_ids[:1] and eos.finish_reason == "stop"
    assert ignored.token_ids == free.token_ids


def test_stop_strings(engine):
    (free,) = _run(engine.generate(PROMPTS[2], GREEDY))
    text = engine.tokenizer.decode(free.token_ids[:4])
    (stopped,) = _run(engine.generate(PROMPTS[2], {**GREEDY, "stop": [text[-3:]]}))
    assert len(stopped.token_ids) <= 4 and stopped.finish_reason == "stop"
    assert text[-3:] in engine.tokenizer.decode(stopped.token_ids)


def test_sampling_params_filter_and_seed(tiny_model_dir):
    params = {"temperature": 1.0, "top_k": 1, "max_tokens": 6, "ignore_eos": True}
    engine = HFGenerationEngine(tiny_model_dir, tiny_model_dir, seed=1)
    (top1,) = _run(engine.generate(PROMPTS[1], params))
    (greedy,) = _run(engine.generate(PROMPTS[1], {"temperature": 0, "max_tokens": 6, "ignore_eos": True}))
    assert top1.token_ids == greedy.token_ids  # top_k=1 leaves only the argmax
    (tiny_p,) = _run(engine.generate(PROMPTS[1], {**params, "top_k": -1, "top_p": 1e-6}))
    assert tiny_p.token_ids == greedy.token_ids  # top_p keeps at least the most likely token
    runs = [_run(HFGenerationEngine(engine.model, seed=7).generate(PROMPTS[1], {**params, "top_k": -1}))[0] for _ in range(2)]
    assert runs[0].token_ids == runs[1].token_ids  # same seed, same samples
    # a repetition penalty changes greedy output on a model that repeats itself
    logits = torch.zeros(1, 8)
    logits[0, 3] = 2.0
    logits[0, 5] = 1.9
    request = type("R", (), {"params": SamplingParams(temperature=0, repetition_penalty=2.0), "prompt_ids": [3],
                             "generated": []})()
    tokens, _ = engine._sample(logits, [request])
    assert tokens.tolist() == [5]


def test_a_request_seed_gives_the_same_samples_whatever_shares_its_batch(engine):
    params = {"temperature": 1.0, "max_tokens": 8, "ignore_eos": True}
    alone = _run(engine.generate(PROMPTS[2], {**params, "seed": 11}))[0]
    crowded = _run(engine.generate(PROMPTS[0], params), engine.generate(PROMPTS[2], {**params, "seed": 11}),
                   engine.generate(PROMPTS[2], {**params, "seed": 12}), engine.generate(PROMPTS[1], params))
    assert crowded[1].token_ids == alone.token_ids
    others = [_run(engine.generate(PROMPTS[2], {**params, "seed": seed}))[0].token_ids for seed in range(12, 16)]
    assert crowded[2].token_ids == others[0] and any(ids != alone.token_ids for ids in others)


def test_abort_returns_partial_output(engine):
    async def main():
        task = asyncio.ensure_future(engine.generate(PROMPTS[0], {**GREEDY, "max_tokens": 500}))
        await asyncio.sleep(0.3)
        engine.abort_all()
        return await task

    out = asyncio.run(main())
    assert isinstance(out, GenerationOutput)
    assert out.stop_reason == "aborted" and len(out.token_ids) < 500


def test_weight_update_changes_output_and_checksum(tiny_model_dir):
    engine = HFGenerationEngine(tiny_model_dir, tiny_model_dir)
    before, checksum = _run(engine.generate(PROMPTS[0], GREEDY))[0], engine.param_checksum()
    state = {name: t.detach().clone() for name, t in engine.model.state_dict().items()}
    torch.manual_seed(3)
    changed = {name: t + 0.5 * torch.randn_like(t) for name, t in state.items()}
    assert engine.load_state_dict(changed) == len(state)
    after = _run(engine.generate(PROMPTS[0], GREEDY))[0]
    assert engine.param_checksum() != checksum and after.token_ids != before.token_ids
    engine.load_state_dict(state)
    assert engine.param_checksum() == checksum
    with pytest.raises(KeyError):
        engine.update_weights([("not.a.weight", torch.zeros(1))])
    with pytest.raises(KeyError):
        engine.load_state_dict({"model.norm.weight": state["model.norm.weight"]})  # strict: the rest is missing
