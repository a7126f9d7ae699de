"""Fixtures for the data tests: the real SmolLM2-135M-Instruct tokenizer/model folder (converted once, cached)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smollm2_dir():
    from agentic_verl.cpu.models import smollm2_hf_dir

    return smollm2_hf_dir()


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_dir))
