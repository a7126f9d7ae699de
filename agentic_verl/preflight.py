"""Preflight for the RAG-R1 recipes: what would make a launched run fail (or train on nothing), checked in seconds.

`check_rag_r1(settings)` returns a `Report` listing every finding, not just the first:

- data: the train/val files exist and are parquet files verl can read, with the rag_r1 loop's columns (RL) or an
  SFT dataset's (`input_ids` + `loss_mask`, or `messages`); their `extra_info.rag_r1.mode` is one mode, the same
  in train and val, and equal to the run's mode when one is given (the data decides: its prompts were written
  for that mode);
- models: a local folder has config.json, weights and (policy) a tokenizer; a Hub id is downloaded on first use,
  or with HF_HUB_OFFLINE=1 must already be in the HF cache;
- retrieval (RL): `GET /health` answers, and `POST /retrieve` with the first training question returns passages;
- GPU memory (GPU runs): parameters counted from the safetensors headers (else estimated from config.json), and
  per GPU: FSDP actor params + grads + Adam states (16 bytes/param, sharded over all GPUs), the reference model
  (bf16, 2 bytes/param, when KL is used), the critic (PPO, 16 bytes/param) and vLLM's
  `gpu_memory_utilization` share of the GPU. Refused when that sum alone exceeds the GPU's memory; activations
  come on top, so passing is necessary, not sufficient. The arithmetic is printed.

The settings come from the flags and, like the recipes use it, from the verl overrides the recipe will launch
with (`settings_from_overrides`): the preflight reads the same `data.train_files=...` verl gets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

STAGES = ("sft", "ppo", "grpo")
GiB = 1024**3
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_RL_COLUMNS = ("prompt", "reward_model", "data_source")
_OFFLINE_VALUES = ("1", "true", "yes", "on")


@dataclass
class RagR1Settings:
    stage: str  # sft | ppo | grpo
    train: str | None = None
    val: str | None = None
    model: str | None = None
    critic_model: str | None = None  # ppo; default: the policy model
    retrieval_url: str | None = None
    mode: str | None = None  # the run-level mode (RAG_MODE); None: the data's
    device: str = "cuda"  # cpu skips the GPU memory budget
    n_gpus: int = 1  # per node
    nnodes: int = 1
    gpu_memory_gb: float | None = None  # per GPU; None: nvidia-smi
    gpu_memory_utilization: float = 0.5  # verl's default
    param_offload: bool = False
    optimizer_offload: bool = False
    use_kl_loss: bool = False  # verl's defaults; the recipes set theirs
    use_kl_in_reward: bool = False


# verl override key -> RagR1Settings field (leading + / ++ are ignored)
OVERRIDE_FIELDS = {
    "data.train_files": "train",
    "data.val_files": "val",
    "actor_rollout_ref.model.path": "model",
    "model.path": "model",  # the SFT trainer
    "critic.model.path": "critic_model",
    "actor_rollout_ref.rollout.custom.rag_r1.retrieval_url": "retrieval_url",
    "actor_rollout_ref.rollout.custom.rag_r1.mode": "mode",
    "trainer.device": "device",
    "trainer.n_gpus_per_node": "n_gpus",
    "trainer.nnodes": "nnodes",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "gpu_memory_utilization",
    "actor_rollout_ref.actor.fsdp_config.param_offload": "param_offload",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "optimizer_offload",
    "engine.param_offload": "param_offload",
    "engine.optimizer_offload": "optimizer_offload",
    "actor_rollout_ref.actor.use_kl_loss": "use_kl_loss",
    "algorithm.use_kl_in_reward": "use_kl_in_reward",
}


def settings_from_overrides(settings: RagR1Settings, overrides: list[str]) -> RagR1Settings:
    """`settings` updated from verl's `key=value` overrides (later ones win, as in hydra); other keys are ignored.

    >>> s = settings_from_overrides(RagR1Settings("grpo"), ["data.train_files=a.parquet", "+trainer.nnodes=2",
    ...                                                     "actor_rollout_ref.actor.use_kl_loss=True", "x=1"])
    >>> s.train, s.nnodes, s.use_kl_loss
    ('a.parquet', 2, True)
    """
    types = {f: type(getattr(settings, f)) for f in ("n_gpus", "nnodes", "gpu_memory_utilization")}
    updates: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = item.lstrip("+").partition("=")
        name = OVERRIDE_FIELDS.get(key)
        if not sep or name is None:
            continue
        value = value.strip().strip("'\"")
        if name in ("param_offload", "optimizer_offload", "use_kl_loss", "use_kl_in_reward"):
            updates[name] = value.lower() == "true"
        elif name in types:
            updates[name] = types[name](float(value)) if types[name] is int else float(value)
        else:
            updates[name] = None if value in ("", "null", "None") else value
    return replace(settings, **updates)


# -- the report ------------------------------------------------------------------------------------
@dataclass
class Report:
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (level, topic, message)

    def ok(self, topic: str, message: str) -> None:
        self.findings.append(("ok", topic, message))

    def note(self, topic: str, message: str) -> None:
        self.findings.append(("note", topic, message))

    def problem(self, topic: str, message: str) -> None:
        self.findings.append(("FAIL", topic, message))

    @property
    def problems(self) -> list[str]:
        return [f"{topic}: {message}" for level, topic, message in self.findings if level == "FAIL"]

    def render(self) -> str:
        lines = [f"{level:4s}  {topic}: {message}" for level, topic, message in self.findings]
        return "\n".join(lines)


def check_rag_r1(settings: RagR1Settings) -> Report:
    """Every check for one recipe launch; see the module docstring."""
    if settings.stage not in STAGES:
        raise ValueError(f"unknown stage {settings.stage!r}; known: {', '.join(STAGES)}")
    report = Report()
    rl = settings.stage != "sft"
    modes = {}
    for role, path in (("train", settings.train), ("val", settings.val)):
        if path is None and role == "val":
            continue
        for one in _paths(path):
            mode = check_data(report, f"{role} data", one, rl=rl)
            if mode:
                modes[f"{role} ({one})"] = mode
    if rl:
        check_modes(report, modes, settings.mode)
    check_model(report, "model", settings.model, tokenizer=True)
    if settings.stage == "ppo":
        check_model(report, "critic model", settings.critic_model or settings.model, tokenizer=False)
    if rl:
        check_retrieval(report, settings.retrieval_url, _first_question(settings.train))
    check_gpu_memory(report, settings)
    return report


# -- data ------------------------------------------------------------------------------------------
def _paths(value: str | None) -> list[str]:
    """verl's data.*_files: one path or a hydra list `[a,b]`."""
    if value is None:
        return [""]
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        return [p.strip().strip("'\"") for p in value[1:-1].split(",") if p.strip()]
    return [value]


def check_data(report: Report, topic: str, path: str, *, rl: bool) -> str | None:
    """Readable parquet with the stage's columns; returns the rag_r1 mode of RL data (None when unknown)."""
    import pyarrow.parquet as pq

    if not path:
        report.problem(topic, "no file given")
        return None
    if "://" in path:
        report.note(topic, f"{path}: a remote path, not checked here")
        return None
    if not Path(path).is_file():
        hint = "agentic-verl data rag-r1 --questions ... --out DIR" if rl else \
            "agentic-verl data sft-trajectories ... --out FILE"
        report.problem(topic, f"{path} does not exist (write it with `{hint}`)")
        return None
    try:
        meta = pq.ParquetFile(path).metadata
        columns = set(pq.read_schema(path).names)
    except Exception as exc:
        report.problem(topic, f"{path} is not a readable parquet file ({type(exc).__name__}: {exc})")
        return None
    if meta.num_rows == 0:
        report.problem(topic, f"{path} has no rows")
        return None
    if not rl:
        if not ({"input_ids", "loss_mask"} <= columns or "messages" in columns):
            report.problem(topic, f"{path} has neither input_ids + loss_mask (agentic-verl data sft-trajectories) "
                                  f"nor messages columns; found {sorted(columns)}")
        else:
            report.ok(topic, f"{path}: {meta.num_rows} rows")
        return None
    missing = [c for c in _RL_COLUMNS if c not in columns]
    if missing:
        report.problem(topic, f"{path} lacks the verl columns {missing} (found {sorted(columns)}): not rag_r1 RL "
                              "data (agentic-verl data rag-r1 writes it)")
        return None
    first = _first_row(path, [c for c in ("prompt", "agent_name") if c in columns])
    prompt = first.get("prompt")
    if not (isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "role" in m for m in prompt)):
        report.problem(topic, f"{path}: `prompt` is not a list of chat messages ({str(prompt)[:80]!r})")
        return None
    agent = first.get("agent_name")
    if agent is not None and not str(agent).startswith("rag_r1"):
        report.problem(topic, f"{path}: rows are for the {agent!r} agent loop, not rag_r1")
        return None
    from agentic_verl.data.rag_r1_parquet import read_mode

    try:
        mode = read_mode(path)
    except ValueError as exc:
        report.problem(topic, str(exc))
        return None
    report.ok(topic, f"{path}: {meta.num_rows} rows, mode {mode}")
    return mode


def _first_row(path: str, columns: list[str]) -> dict:
    """The first row's `columns`, reading only the first row group (training files can be large)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(0, columns=columns).slice(0, 1).to_pylist()[0]


def check_modes(report: Report, modes: dict[str, str], run_mode: str | None) -> None:
    found = set(modes.values())
    if len(found) > 1:
        listing = ", ".join(f"{where}: {mode}" for where, mode in modes.items())
        report.problem("mode", f"the data files were written for different modes ({listing}); write them with the "
                               "same `agentic-verl data rag-r1 --mode`")
        return
    if run_mode and found and run_mode not in found:
        [data_mode] = found
        report.problem("mode", f"RAG_MODE={run_mode} but the data's prompts were written for {data_mode} "
                               f"(extra_info.rag_r1.mode). Unset RAG_MODE (it defaults to the data's mode), or "
                               f"regenerate the data: agentic-verl data rag-r1 --questions ... --out DIR --mode "
                               f"{run_mode}")
    elif found:
        report.ok("mode", f"{found.pop()} (the data's)" + (" = RAG_MODE" if run_mode else ""))


def _first_question(train: str | None) -> str | None:
    """The first training row's question (extra_info.question, else its last user message), for a test search."""
    try:
        row = _first_row(_paths(train)[0], ["prompt", "extra_info"])
    except Exception:
        return None
    question = (row.get("extra_info") or {}).get("question")
    if not question:
        users = [m.get("content") for m in row.get("prompt") or [] if isinstance(m, dict) and m.get("role") == "user"]
        question = users[-1] if users else None
    return str(question)[:200] if question else None


# -- models ----------------------------------------------------------------------------------------
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


# -- retrieval -------------------------------------------------------------------------------------
def check_retrieval(report: Report, url: str | None, question: str | None, timeout_s: float = 10.0) -> None:
    import asyncio

    import httpx

    from agentic_verl.retrieval.client import RetrievalClient, RetrievalError

    if not url:
        report.problem("retrieval", "no retrieval URL given (RETRIEVAL_URL)")
        return
    base = url.rstrip("/").removesuffix("/retrieve")
    start = ("start one: agentic-verl serve retrieval --index INDEX_DIR --port PORT, or INDEX_DIR=... bash "
             "tools/launch_retrieval_server.sh bash recipes/rag_r1/<recipe>.sh")
    try:
        health = httpx.get(base + "/health", timeout=timeout_s, trust_env=False)
    except httpx.HTTPError as exc:
        report.problem("retrieval", f"no answer from {base}/health ({type(exc).__name__}: {exc}); {start}")
        return
    if health.status_code != 200:
        report.problem("retrieval", f"{base}/health answered {health.status_code}: {health.text[:200]}")
        return
    query = question or "test"

    async def search():
        client = RetrievalClient(base, timeout_s=timeout_s, max_retries=0)
        try:
            return await client.retrieve([query], topk=3)
        finally:
            await client.aclose()

    try:
        [passages] = asyncio.run(search())
    except (RetrievalError, ValueError) as exc:
        report.problem("retrieval", f"{base}/health is up but POST /retrieve failed: {exc}")
        return
    if not passages and question is None:  # no training question to search for (the data check says why)
        report.ok("retrieval", f"{base}: /health ok; /retrieve answers (no training question to test a search with)")
        return
    if not passages:
        report.problem("retrieval", f"{base}/retrieve returned no passages for the first training question "
                                    f"{query!r}: is it the index of this data's corpus?")
        return
    report.ok("retrieval", f"{base}: /health ok; /retrieve {query[:60]!r} -> {len(passages)} passage(s)")


# -- GPU memory ------------------------------------------------------------------------------------
def gpu_memory_gib() -> float | None:
    """The smallest GPU's memory (GiB) from nvidia-smi; None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        sizes = [float(line) for line in out.split() if line.strip()]
    except (subprocess.SubprocessError, ValueError, OSError):
        return None
    return min(sizes) / 1024 if sizes else None  # MiB -> GiB


def memory_budget(settings: RagR1Settings, params: int, critic_params: int | None,
                  gpu_gib: float) -> tuple[float, list[str]]:
    """(GiB per GPU, one line per term) of the estimate in the module docstring.

    >>> total, lines = memory_budget(RagR1Settings("grpo", n_gpus=8, use_kl_loss=True), 7_000_000_000, None, 80.0)
    >>> round(total, 1), len(lines)
    (54.7, 3)
    """
    gpus = max(1, settings.n_gpus * settings.nnodes)
    actor_bytes = (0 if settings.param_offload else 8) + (0 if settings.optimizer_offload else 8)
    terms = [(f"actor params+grads+Adam {actor_bytes} B x {params / 1e9:.2f}B params / {gpus} GPU(s)",
              actor_bytes * params / gpus)]
    if settings.stage != "sft" and (settings.use_kl_loss or settings.use_kl_in_reward):
        terms.append((f"reference model 2 B (bf16) x {params / 1e9:.2f}B / {gpus}", 2 * params / gpus))
    if settings.stage == "ppo" and critic_params:
        terms.append((f"critic 16 B x {critic_params / 1e9:.2f}B / {gpus}", 16 * critic_params / gpus))
    if settings.stage != "sft":
        terms.append((f"vLLM gpu_memory_utilization {settings.gpu_memory_utilization:g} x {gpu_gib:.0f} GiB",
                      settings.gpu_memory_utilization * gpu_gib * GiB))
    return sum(b for _, b in terms) / GiB, [f"{label} = {b / GiB:.1f} GiB" for label, b in terms]


def check_gpu_memory(report: Report, settings: RagR1Settings) -> None:
    if settings.device == "cpu":
        report.ok("gpu memory", "CPU run (AGENTIC_VERL_DEVICE=cpu): no GPU budget")
        return
    gpu_gib = settings.gpu_memory_gb or gpu_memory_gib()
    if gpu_gib is None:
        report.note("gpu memory", "per-GPU memory unknown (no nvidia-smi; set GPU_MEMORY_GB / --gpu-memory-gb): "
                                  "budget not checked")
        return
    counted = _count(settings.model)
    if counted is None:
        report.note("gpu memory", f"cannot count the parameters of {settings.model} (not on this machine): budget "
                                  "not checked")
        return
    params, how = counted
    critic = _count(settings.critic_model or settings.model) if settings.stage == "ppo" else None
    total, lines = memory_budget(settings, params, critic[0] if critic else None, gpu_gib)
    arithmetic = f"{params / 1e9:.2f}B params ({how}); per GPU: " + "; ".join(lines) + \
        f"; total {total:.1f} of {gpu_gib:.1f} GiB, activations on top"
    if total > gpu_gib:
        report.problem("gpu memory", f"{arithmetic}. Over by {total - gpu_gib:.1f} GiB: use more GPUs (N_GPUS, "
                                     "NNODES), lower actor_rollout_ref.rollout.gpu_memory_utilization, or offload "
                                     "(actor_rollout_ref.actor.fsdp_config.param_offload=True / optimizer_offload=True)")
    else:
        report.ok("gpu memory", arithmetic)


def _count(model: str | None) -> tuple[int, str] | None:
    folder = model_folder(model) if model else None
    return count_parameters(folder) if folder is not None else None
