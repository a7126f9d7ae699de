"""Fixtures for driving our agent loops the way verl does, on CPU.

- Model folders verl can load (`HFModelConfig` needs config.json + tokenizer): the real Qwen tokenizer with a
  tiny Qwen2 config (no weights needed: scripted servers), and SmolLM2-135M-Instruct (real weights).
- Servers with verl's `server_manager.generate(...) -> TokenOutput` signature:
  `EngineServer` wraps the project's CPU engine (`HFGenerationEngine`, a real transformers model; it drops
  `stop` strings before the engine sees them, acting as a server without stop-string support, so the loops'
  own cut on the token stream is what gets exercised), `ScriptedServer` replays token streams made
  from text for malformed cases; it can emulate a server that honours `stop` strings.
- `verl_config(...)`: verl's own ppo_trainer.yaml composed with hydra; `build_loop(...)` instantiates a
  registered loop exactly as `AgentLoopWorker._run_agent_loop` does.
- A real retrieval server (bm25s index + the project's FastAPI app) on a loopback port, in a thread.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from agent_loop_helpers import CORPUS, recording_retrieval_server

# Registering our loops in verl: exactly what `import verl` does through the entry point.
import agentic_verl.plugin  # noqa: F401
from agentic_verl.net import free_port

QWEN_ARCH = "Qwen2ForCausalLM"


# -- model folders ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def qwen_dir(tmp_path_factory) -> Path:
    """The Qwen tokenizer + a tiny Qwen2 config.json (model_type qwen2 selects verl's Qwen token builder)."""
    from transformers import Qwen2Config

    from agentic_verl.cpu.models import qwen_tokenizer_dir

    out = tmp_path_factory.mktemp("qwen_tok")
    for name in os.listdir(qwen_tokenizer_dir()):
        shutil.copy(qwen_tokenizer_dir() / name, out / name)
    Qwen2Config(vocab_size=151936, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, architectures=[QWEN_ARCH]).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def smol_dir(tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct as an HF folder. The GGUF's tokenizer metadata names <|im_start|> as EOS and no
    pad token; the model's generation_config (EOS <|im_end|>) is right, so the tokenizer is fixed to match."""
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import smollm2_hf_dir

    src = smollm2_hf_dir()
    out = tmp_path_factory.mktemp("smollm2")
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        os.symlink(src / name, out / name)
    tokenizer = AutoTokenizer.from_pretrained(str(src))
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.pad_token = "<|im_end|>"
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def qwen_tokenizer(qwen_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen_dir))


@pytest.fixture(scope="session")
def smol_tokenizer(smol_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smol_dir))


@pytest.fixture(scope="session")
def smol_engine(smol_dir):
    """The 135M model, loaded once per session behind the project's CPU generation engine.

    One torch thread: on the shared 2-core machine two intra-op threads made decoding ~10x slower."""
    import torch

    from agentic_verl.generation.hf_engine import HFGenerationEngine

    torch.set_num_threads(1)
    return HFGenerationEngine(str(smol_dir), str(smol_dir), dtype="float32", max_batch_size=8, seed=0)


@pytest.fixture(scope="session")
def retrieval_server(tmp_path_factory):
    """The project's /retrieve app over a bm25s index of CORPUS; `.service.calls` lists each search's queries."""
    from agentic_verl.retrieval.index import build_index

    folder = tmp_path_factory.mktemp("retrieval")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in CORPUS))
    build_index(corpus, folder / "index", show_progress=False)
    server = recording_retrieval_server(folder / "index")
    yield server
    server.stop()


@pytest.fixture()
def silent_server():
    """A TCP server on loopback that accepts connections and never answers (a hung retrieval server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


@pytest.fixture()
def dead_url():
    """A loopback URL nothing listens on (a retrieval server that is down)."""
    return f"http://127.0.0.1:{free_port()}"


