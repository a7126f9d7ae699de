"""Run a registered verl agent loop in this process, the way verl's AgentLoopWorker runs it.

verl builds a fresh loop per sample with `hydra.utils.instantiate(registry[name], trainer_config=..., server_manager=...,
tokenizer=..., ...)` and awaits `loop.run(sampling_params, **dataset_row)`. We do exactly that, with:

- `EngineServerManager`: the smallest stand-in for verl's `LLMServerClient` (its `generate(request_id, *, prompt_ids,
  sampling_params, ...) -> TokenOutput`), backed by an in-process engine instead of Ray servers;
- `ScriptedServerManager`: the same interface answering with pre-written turns (SFT data built in the rollout's
  exact token layout);
- `loop_trainer_config`: the slice of the trainer config agent loops read (rollout lengths, `rollout.custom`,
  `data.apply_chat_template_kwargs`);
- `sample_kwargs`: a parquet row turned into the kwargs RLHFDataset + AgentLoopWorker pass (`raw_prompt`, ...).

Engines come from `agentic_verl.generation.open_engine`. Used by evaluation (`agentic_verl.eval`) and by SFT data
generation (`agentic_verl.data`), which therefore never import each other.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from omegaconf import OmegaConf


class EngineServerManager:
    """verl's `server_manager.generate(...)` over an `HFGenerationEngine` or a `VLLMGenerationEngine` (token in,
    token out); sampling params, stop strings included, go to the engine as they are."""

    def __init__(self, engine):
        self.engine = engine
        self.calls = 0

    async def generate(self, request_id, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       image_data=None, video_data=None, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.calls += 1
        out = await self.engine.generate(list(prompt_ids), dict(sampling_params), request_id=str(request_id))
        return TokenOutput(token_ids=list(out.token_ids), log_probs=out.log_probs, stop_reason=out.stop_reason,
                           num_preempted=0, extra_fields={"finish_reason": out.finish_reason})


class ScriptedServerManager:
    """Answers the loop's `generate` calls with pre-written turns (token ids), in order. EOS ends the last turn, or
    every turn with `eos_every_turn` (a loop whose steps each end with EOS, as `bfcl_multi_turn`'s do)."""

    def __init__(self, tokenizer, turns: list[str], eos_token_id: int | None, *, eos_every_turn: bool = False):
        self.tokenizer, self.turns, self.eos_token_id = tokenizer, list(turns), eos_token_id
        self.eos_every_turn = eos_every_turn
        self.prompts: list[list[int]] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        if len(self.prompts) >= len(self.turns):
            raise RuntimeError(f"the loop asked for turn {len(self.prompts) + 1} of a {len(self.turns)}-turn script")
        text = self.turns[len(self.prompts)]
        self.prompts.append(list(prompt_ids))
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if self.eos_token_id is not None and (self.eos_every_turn or len(self.prompts) == len(self.turns)):
            ids.append(self.eos_token_id)  # a policy stops with EOS; the loop cuts after </answer> anyway
        return TokenOutput(token_ids=ids, log_probs=None, stop_reason="completed")


def loop_trainer_config(response_length: int, prompt_length: int = 1024, custom: dict | None = None,
                        val_temperature: float = 0.0):
    """The part of verl's trainer config that AgentLoopBase and our loops read."""
    return OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": int(prompt_length), "response_length": int(response_length),
            "custom": custom or {}, "agent": {"agent_loop_config_path": None},
            "multi_turn": {"tool_config_path": None}, "val_kwargs": {"temperature": val_temperature},
        }},
        "data": {"apply_chat_template_kwargs": {}, "mm_processor_kwargs": {}},
    })


class _OncePerMessage(logging.Filter):
    """verl warns about the Continuous Token builder family on every loop construction; once is enough."""

    def __init__(self):
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


_ONCE = _OncePerMessage()


def make_agent_loop(name: str, *, tokenizer, server_manager, trainer_config, hf_model_type: str | None = None,
                    loop_kwargs: dict | None = None, tools: list | None = None):
    """Instantiate the loop registered under `name` (importing the plugin registers ours), with `tools` (verl
    BaseTools, as verl's worker passes the tool_config_path's) for loops that use them."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as registry  # verl's own lookup
    from verl.utils.dataset.rl_dataset import RLHFDataset

    import agentic_verl.plugin  # noqa: F401 - registers our loops, as `import verl` does with the entry point

    wiring_logger = logging.getLogger("verl.utils.tokenizer.continuous_token_wiring")
    if _ONCE not in wiring_logger.filters:
        wiring_logger.addFilter(_ONCE)
    if name not in registry:  # a loop whose module failed to import, or one of ours not listed in plugin.COMPONENTS
        _raise_import_error_of(name)
        _import_loop_module(name)
    if name not in registry:
        raise ValueError(f"agent loop {name!r} is not registered; known: {sorted(registry)}")
    return hydra.utils.instantiate(
        config={**registry[name], **(loop_kwargs or {})},
        trainer_config=DictConfigWrap(config=trainer_config),
        server_manager=server_manager,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type=hf_model_type,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(trainer_config.data),
        tools=ToolListWrap(list(tools or [])),
    )


def _raise_import_error_of(name: str) -> None:
    """A loop of plugin.COMPONENTS whose module failed to import (the plugin logged it and went on): that error."""
    import agentic_verl.plugin as plugin

    for component in plugin.COMPONENTS:
        if component.kind == "agent_loop" and component.name == name and component.module in plugin.IMPORT_ERRORS:
            raise ImportError(f"agent loop {name!r}: its module {component.module} failed to import: "
                              f"{plugin.IMPORT_ERRORS[component.module]} (install what it needs)")


def _import_loop_module(name: str) -> None:
    """Import `agentic_verl.agent_loops.<name>` when it exists. Only its own absence is "not registered": a module that
    exists but fails to import (a missing dependency, an error in it) raises that error, named as such."""
    if not name.isidentifier():
        return
    module = f"agentic_verl.agent_loops.{name}"
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return  # no such module: the caller reports the name as not registered
        raise ImportError(f"agent loop {name!r}: its module {module} failed to import: {type(exc).__name__}: {exc} "
                          f"(install what it needs)") from exc
    except Exception as exc:
        raise ImportError(f"agent loop {name!r}: its module {module} failed to import: "
                          f"{type(exc).__name__}: {exc}") from exc


def sample_kwargs(row: dict) -> dict:
    """A parquet row as `loop.run(**kwargs)` receives it (RLHFDataset.__getitem__ + AgentLoopWorker)."""
    extra = dict(row.get("extra_info") or {})
    kwargs = {k: v for k, v in row.items() if k != "prompt"}
    kwargs.update(raw_prompt=list(row["prompt"]), extra_info=extra, index=extra.get("index", 0),
                  tools_kwargs=extra.get("tools_kwargs", {}), interaction_kwargs=extra.get("interaction_kwargs", {}))
    return kwargs


def model_type(model_dir) -> str | None:
    from transformers import AutoConfig

    return getattr(AutoConfig.from_pretrained(str(model_dir)), "model_type", None)
