"""Preflight: model folders (or Hub ids) and their parameter counts."""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

from agentic_verl.preflight.settings import Report

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_OFFLINE_VALUES = ("1", "true", "yes", "on")


def _offline() -> bool:
    return any(os.environ.get(v, "").lower() in _OFFLINE_VALUES for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def model_folder(model: str) -> Path | None:
    """The local folder of `model`: the path itself, or a Hub id's snapshot in the HF cache; None if neither."""
    if Path(model).expanduser().is_dir():
        return Path(model).expanduser()
    if _HUB_ID.match(model):
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "config.json")
        except Exception:
            cached = None
        if isinstance(cached, str):
            return Path(cached).parent
    return None


def check_model(report: Report, topic: str, model: str | None, *, tokenizer: bool) -> None:
    if not model:
        report.problem(topic, "no model given")
        return
    folder = model_folder(model)
    if folder is None:
        if Path(model).expanduser().exists():
            report.problem(topic, f"{model} is a file, not a model folder (config.json, weights, tokenizer)")
        elif not _HUB_ID.match(model):
            report.problem(topic, f"{model} does not exist (a local model folder, or a Hub id like "
                                  "Qwen/Qwen2.5-7B-Instruct)")
        elif _offline():
            report.problem(topic, f"{model}: no such local folder, and HF_HUB_OFFLINE=1 while it is not in the HF "
                                  f"cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')}); download it first "
                                  f"(huggingface-cli download {model}) or pass a local folder")
        else:
            report.note(topic, f"{model}: no such local folder, so a Hub id: verl will download it from the Hugging "
                               "Face Hub (not checked here)")
        return
    files = {p.name for p in folder.iterdir()}
    missing = []
    if "config.json" not in files:
        missing.append("config.json")
    if not any(n.endswith((".safetensors", ".bin")) for n in files):
        missing.append("weights (*.safetensors / *.bin)")
    if tokenizer and not files & {"tokenizer.json", "tokenizer_config.json", "tokenizer.model"}:
        missing.append("a tokenizer")
    where = "" if str(folder) == model else f" (cached at {folder})"
    if missing:
        report.problem(topic, f"{model}{where} lacks {', '.join(missing)}")
    else:
        report.ok(topic, f"{model}{where}")


def count_parameters(folder: Path) -> tuple[int, str] | None:
    """(parameters, how they were counted): exact from the safetensors headers, else estimated from config.json."""
    shards = sorted(folder.glob("*.safetensors"))
    if shards:
        total = 0
        for shard in shards:
            with open(shard, "rb") as f:
                (size,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(size))
            total += sum(_prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
        return total, f"{len(shards)} safetensors file(s)"
    config_path = folder / "config.json"
    if not config_path.is_file():
        return None
    estimate = estimate_parameters(json.loads(config_path.read_text()))
    return (estimate, "estimated from config.json") if estimate else None


def estimate_parameters(config: dict) -> int | None:
    """A decoder-only transformer's parameters from its config (embeddings, attention with GQA, gated MLP).

    >>> estimate_parameters({"vocab_size": 100, "hidden_size": 8, "num_hidden_layers": 2, "intermediate_size": 16,
    ...                      "num_attention_heads": 2, "num_key_value_heads": 1, "tie_word_embeddings": True})
    1992
    """
    config = config.get("text_config", config)
    try:
        vocab, hidden, layers = config["vocab_size"], config["hidden_size"], config["num_hidden_layers"]
        inter = config.get("intermediate_size", 4 * hidden)
        heads = config.get("num_attention_heads", 1)
        kv_heads = config.get("num_key_value_heads", heads)
    except KeyError:
        return None
    head_dim = config.get("head_dim") or hidden // heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    per_layer = attention + 3 * hidden * inter + 2 * hidden
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings", False) else 2)
    return int(embeddings + layers * per_layer + hidden)


def _prod(shape: list[int]) -> int:
    out = 1
    for n in shape:
        out *= int(n)
    return out
