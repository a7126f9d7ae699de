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

from agentic_verl.preflight.data_checks import check_data, check_modes, data_paths, first_question
from agentic_verl.preflight.gpu_memory import check_gpu_memory, memory_budget
from agentic_verl.preflight.model_checks import check_model, count_parameters, estimate_parameters
from agentic_verl.preflight.retrieval_check import check_retrieval
from agentic_verl.preflight.settings import STAGES, RagR1Settings, Report, settings_from_overrides

__all__ = ["STAGES", "RagR1Settings", "Report", "check_gpu_memory", "check_rag_r1", "count_parameters",
           "estimate_parameters", "memory_budget", "settings_from_overrides"]


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
        for one in data_paths(path):
            mode = check_data(report, f"{role} data", one, rl=rl)
            if mode:
                modes[f"{role} ({one})"] = mode
    if rl:
        check_modes(report, modes, settings.mode)
    check_model(report, "model", settings.model, tokenizer=True)
    if settings.stage == "ppo":
        check_model(report, "critic model", settings.critic_model or settings.model, tokenizer=False)
    if rl:
        check_retrieval(report, settings.retrieval_url, first_question(settings.train))
    check_gpu_memory(report, settings)
    return report
