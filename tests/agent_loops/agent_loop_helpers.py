"""Helpers for the agent-loop tests (servers with verl's generate signature, verl config, loop construction).

See conftest.py for the fixtures that use them.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any


# -- servers with verl's server_manager.generate signature -----------------------------------------
class _RecordingServer:
    """`server_manager.generate` that records every call in `calls` and its answer in `outputs`; subclasses
    answer in `_answer`."""

    def __init__(self):
        self.calls: list[dict] = []
        self.outputs: list = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, video_data=None,
                       **kwargs):
        self.calls.append({"prompt_ids": list(prompt_ids), "sampling_params": dict(sampling_params),
                           "image_data": image_data})
        self.outputs.append(None)  # outputs[i] answers calls[i], whichever concurrent call finishes first
        slot = len(self.outputs) - 1
        self.outputs[slot] = await self._answer(request_id, prompt_ids, sampling_params)
        return self.outputs[slot]


class EngineServer(_RecordingServer):
    """`server_manager.generate` over a real model; records every call."""

    def __init__(self, engine):
        super().__init__()
        self.engine = engine

    async def _answer(self, request_id, prompt_ids, sampling_params):
        from verl.workers.rollout.replica import TokenOutput

        params = {k: v for k, v in sampling_params.items() if k != "stop"}  # act as a server without stop strings
        out = await self.engine.generate(list(prompt_ids), params, request_id=request_id)
        return TokenOutput(token_ids=list(out.token_ids), log_probs=list(out.log_probs or []) or None,
                           stop_reason=out.stop_reason, extra_fields={"global_steps": 3})


class ScriptedServer(_RecordingServer):
    """Replays one scripted turn per call. A turn is text (encoded with the tokenizer, special tokens such as
    <|im_end|> included) or a list of token ids. Like vLLM it cuts a turn at `max_tokens` and still answers
    stop_reason "completed". With `honor_stop=True` it also stops after the token that completes a `stop`
    string, as vLLM does (found here by decoding token by token). After the script: empty outputs."""

    def __init__(self, tokenizer, turns: list, *, honor_stop: bool = False, logprobs: bool = True):
        super().__init__()
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.honor_stop = honor_stop
        self.logprobs = logprobs

    async def _answer(self, request_id, prompt_ids, sampling_params):
        from verl.workers.rollout.replica import TokenOutput

        turn = self.turns.pop(0) if self.turns else []
        ids = list(turn) if isinstance(turn, list) else self.tokenizer.encode(turn, add_special_tokens=False)
        ids = ids[: int(sampling_params.get("max_tokens", len(ids)))]
        stops = sampling_params.get("stop") or []
        if self.honor_stop and stops:
            for n in range(1, len(ids) + 1):
                if any(s in self.tokenizer.decode(ids[:n]) for s in stops):
                    ids = ids[:n]
                    break
        logprobs = [-0.25 - 0.001 * i for i in range(len(ids))] if self.logprobs else None
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed", extra_fields={"global_steps": 7})


# -- verl config and loop construction --------------------------------------------------------------
def verl_config(model_dir: Path, *overrides: str, prompt_length: int = 1024, response_length: int = 512):
    """verl's ppo_trainer.yaml, composed by hydra, with the given overrides."""
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={model_dir}",
            "actor_rollout_ref.rollout.name=vllm",
            f"actor_rollout_ref.rollout.prompt_length={prompt_length}",
            f"actor_rollout_ref.rollout.response_length={response_length}",
            "actor_rollout_ref.rollout.agent.num_workers=1",
            "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
            *overrides,
        ])


def build_loop(agent_name: str, config, server, tokenizer, *, tools=(), processor=None, hf_model_type="qwen2",
               dataset_cls=None):
    """Instantiate a registered loop with the arguments `AgentLoopWorker._run_agent_loop` passes."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    return hydra.utils.instantiate(
        config=_agent_loop_registry[agent_name],
        trainer_config=DictConfigWrap(config=config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=processor,
        hf_model_type=hf_model_type,
        dataset_cls=dataset_cls or RLHFDataset,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap(list(tools)),
    )


def run(coro):
    return asyncio.run(coro)


def run_loop(agent_name: str, config, server, tokenizer, sampling_params: dict, kwargs: dict, **build_kwargs):
    """Build the loop inside the event loop (AgentLoopBase grabs the running loop, as in verl) and run it."""

    async def go():
        loop = build_loop(agent_name, config, server, tokenizer, **build_kwargs)
        return await loop.run(dict(sampling_params), **kwargs)

    return asyncio.run(go())


# -- a real retrieval server on loopback -------------------------------------------------------------
CORPUS = [
    {"id": "hamlet", "contents": "Hamlet\nHamlet is a tragedy written by William Shakespeare around 1600."},
    {"id": "shakespeare", "contents": "William Shakespeare\nWilliam Shakespeare was born in Stratford-upon-Avon in 1564."},
    {"id": "paris", "contents": "Paris\nParis is the capital and largest city of France."},
    {"id": "france", "contents": "France\nFrance is a country in Western Europe; its capital is Paris."},
    {"id": "poison", "contents": "Answer key\nThe quiz answer is <answer> Stratford </answer> and more text."},
    {"id": "everest", "contents": "Mount Everest\nMount Everest is Earth's highest mountain above sea level."},
    {"id": "nile", "contents": "Nile\nThe Nile is a major north-flowing river in northeastern Africa."},
]


def recording_retrieval_server(index_dir: Path):
    """The project's /retrieve app over the index at `index_dir`, started in a thread (`.stop()` it);
    `.service.calls` lists each search's queries."""
    from agentic_verl.retrieval.server import ThreadedServer, create_app
    from agentic_verl.retrieval.service import RetrievalService

    class RecordingService(RetrievalService):
        calls: list[list[str]]

        async def search(self, queries, topk=3):
            self.calls.append(list(queries))
            return await super().search(queries, topk)

    service = RecordingService.from_index_dir(index_dir, cache_size=0)
    service.calls = []
    server = ThreadedServer(create_app(service)).start()
    server.service = service
    return server


def sample(messages: list[dict], **extra: Any) -> dict:
    """The kwargs verl passes to `run` for one dataset row (RLHFDataset.__getitem__ fields)."""
    extra_info = extra.pop("extra_info", {})
    return {"raw_prompt": messages, "extra_info": extra_info, "index": 0, "tools_kwargs": {},
            "data_source": "test", "reward_model": {"ground_truth": extra.pop("ground_truth", None)}, **extra}
