"""Model folders for CPU runs: the tiny random models, and SmolLM2-135M-Instruct converted from its GGUF."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentic_verl.cli import main as cli
from agentic_verl.generation.hf_engine import HFGenerationEngine


def test_tiny_llama_from_the_cli_loads_and_generates(tmp_path, capsys):
    assert cli(["cpu-model", "tiny", "--arch", "llama", "--out", str(tmp_path / "llama")]) == 0
    path = capsys.readouterr().out.strip()
    config = json.loads((tmp_path / "llama" / "config.json").read_text())
    assert path == str(tmp_path / "llama") and config["architectures"] == ["LlamaForCausalLM"]
    engine = HFGenerationEngine(path, path)
    assert engine.tokenizer.eos_token == "<|im_end|>" and engine.eos_token_ids == [engine.tokenizer.eos_token_id]
    out = asyncio.run(engine.generate([1, 2, 3], {"temperature": 0, "max_tokens": 4, "ignore_eos": True}))
    assert len(out.token_ids) == 4


def test_tiny_needs_an_output_folder():
    assert cli(["cpu-model", "tiny"]) == 2


@pytest.mark.slow
def test_smollm2_converted_once_answers_sensibly():
    from agentic_verl.cpu.models import smollm2_hf_dir

    path = smollm2_hf_dir()  # cached under $AGENTIC_VERL_CACHE after the first conversion
    assert smollm2_hf_dir() == path and (path / "model.safetensors").is_file()
    engine = HFGenerationEngine(path, path)
    assert engine.model.config.model_type == "llama" and engine.model.num_parameters() > 130e6
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    prompt = engine.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = engine.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    out = asyncio.run(engine.generate(prompt_ids, {"temperature": 0, "max_tokens": 24}))
    answer = engine.tokenizer.decode(out.token_ids, skip_special_tokens=True)
    assert "Paris" in answer, answer
    # the GGUF names <|im_start|> as EOS; the converted folder must stop on the end-of-turn token instead
    assert engine.tokenizer.eos_token == "<|im_end|>"
    assert out.stop_reason == "completed" and out.token_ids[-1] == engine.tokenizer.eos_token_id



@pytest.mark.slow
def test_tiny_model_with_smollm2s_tokenizer_has_its_vocabulary_and_end_of_turn(tmp_path):
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import make_tiny_model, smollm2_hf_dir

    smollm2 = smollm2_hf_dir()
    path = make_tiny_model(tmp_path / "tiny", arch="llama", tokenizer_dir=smollm2)
    config = json.loads((path / "config.json").read_text())
    reference = AutoTokenizer.from_pretrained(str(smollm2))
    assert config["vocab_size"] == len(reference) == 49152  # not Qwen's 151k
    engine = HFGenerationEngine(path, path)
    assert engine.tokenizer.get_vocab() == reference.get_vocab()
    assert engine.tokenizer.eos_token == "<|im_end|>" and config["eos_token_id"] == reference.eos_token_id
