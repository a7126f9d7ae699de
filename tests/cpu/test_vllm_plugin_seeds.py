"""Workaround 3 of agentic_verl/cpu/vllm_plugin.py: a seeded request whose prompt is prefilled in chunks must not
kill vLLM's CPU engine (its model runner rewinds the request's generator with get/set_offset, which a CPU generator
lacks). The end-to-end proof is tests/cpu/test_bfcl_mt_grpo.py, whose prompts are longer than one 1024-token
chunk; this checks the patch itself on vLLM's own InputBatch.add_request."""

from __future__ import annotations

import types

import pytest
import torch

from agentic_verl.cpu import vllm_plugin


@pytest.fixture()
def recorded(monkeypatch):
    from vllm.v1.worker.gpu_input_batch import InputBatch

    seen = []
    monkeypatch.setattr(InputBatch, "add_request", lambda self, request: seen.append(request) or len(seen) - 1)
    vllm_plugin.let_seeded_requests_survive_chunked_prefill()
    vllm_plugin.let_seeded_requests_survive_chunked_prefill()  # vLLM may register plugins more than once
    return InputBatch, seen


def test_a_plain_cpu_generator_cannot_rewind_as_vllm_asks():
    with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
        torch.Generator(device="cpu").get_offset()


def test_a_seeded_cpu_request_gets_a_generator_that_rewinds_harmlessly_and_keeps_its_stream(recorded):
    input_batch, seen = recorded
    original = torch.Generator(device="cpu").manual_seed(1234)
    expected = torch.empty(6).exponential_(generator=torch.Generator(device="cpu").manual_seed(1234))
    request = types.SimpleNamespace(generator=original)
    input_batch.add_request(None, request)
    [added] = seen
    generator = added.generator
    assert generator is not original and isinstance(generator, torch.Generator)
    generator.set_offset(generator.get_offset() - 4)  # what vLLM does for a token it drops
    assert torch.equal(torch.empty(6).exponential_(generator=generator), expected)
    input_batch.add_request(None, added)  # a resumed request keeps the same generator
    assert seen[1].generator is generator


def test_requests_without_a_cpu_generator_are_left_alone(recorded):
    input_batch, seen = recorded
    unseeded = types.SimpleNamespace(generator=None)
    on_gpu = types.SimpleNamespace(generator=types.SimpleNamespace(device=torch.device("cuda", 0)))
    gpu_generator = on_gpu.generator
    input_batch.add_request(None, unseeded)
    input_batch.add_request(None, on_gpu)
    assert seen[0].generator is None and seen[1].generator is gpu_generator
