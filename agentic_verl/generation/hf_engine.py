"""Batched token-in/token-out generation with a plain transformers causal LM.

Usable on its own, without Ray or verl (evaluation uses it in-process)::

    engine = HFGenerationEngine("path/to/hf_model", dtype="float32", max_batch_size=16)
    out = await engine.generate([1, 2, 3], {"temperature": 0, "max_tokens": 8})
    out.token_ids, out.log_probs, out.stop_reason     # stop_reason: "completed" | "aborted"

Concurrent `generate` calls are grouped by a scheduler into one batch (up to `max_batch_size`
rows; each row keeps its own sampling parameters), left-padded, prefilled once and decoded step by
step with a KV cache; a row that hits EOS, one of its stop token ids or its token budget is retired
at once (its cache rows are dropped and its caller is answered while the rest keep decoding).
Only the last position's logits are ever materialised (`logits_to_keep=1`), so memory stays at
B x V per step, never B x T x V. Requests that arrive while a batch runs form the next batch.

Log-probabilities are those of the chosen token under `log_softmax(logits / temperature)` (temperature
1 when greedy), before top-k/top-p/repetition-penalty filtering -- what verl's trainer recomputes, so
`training/rollout_probs_diff_*` compares like with like.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

logger = logging.getLogger("agentic_verl.generation.hf_engine")

_GREEDY_TEMPERATURE = 1e-5
_KNOWN_PARAMS = {"temperature", "top_p", "top_k", "repetition_penalty", "max_tokens", "max_new_tokens",
                 "stop_token_ids", "stop", "ignore_eos", "logprobs", "seed"}


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling parameters (vLLM's names and meanings)."""

    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = -1  # -1 (or 0) = off
    repetition_penalty: float = 1.0
    max_tokens: int | None = None  # None: the engine's default budget
    stop_token_ids: tuple[int, ...] = ()  # in addition to EOS; the stop token is returned, as in vLLM
    stop: tuple[str, ...] = ()  # stop strings (needs a tokenizer); the token completing one is returned
    ignore_eos: bool = False
    logprobs: bool = True
    seed: int | None = None  # this request's own sampling generator (None: the engine's shared one)

    @classmethod
    def from_dict(cls, params: Mapping[str, Any] | None) -> SamplingParams:
        params = dict(params or {})
        unknown = sorted(set(params) - _KNOWN_PARAMS)
        if unknown:
            logger.warning("HFGenerationEngine ignores unsupported sampling params %s", unknown)
        max_tokens = params.get("max_tokens", params.get("max_new_tokens"))
        logprobs = params.get("logprobs", True)
        return cls(
            temperature=float(params.get("temperature", 1.0)),
            top_p=float(params.get("top_p", 1.0)),
            top_k=int(params.get("top_k", -1) if params.get("top_k") is not None else -1),
            repetition_penalty=float(params.get("repetition_penalty", 1.0) or 1.0),
            max_tokens=None if max_tokens is None else int(max_tokens),
            stop_token_ids=tuple(int(t) for t in (params.get("stop_token_ids") or ())),
            stop=(params["stop"],) if isinstance(params.get("stop"), str) else tuple(params.get("stop") or ()),
            ignore_eos=bool(params.get("ignore_eos", False)),
            logprobs=logprobs is not None and logprobs is not False,
            seed=None if params.get("seed") is None else int(params["seed"]),
        )


@dataclass
class GenerationOutput:
    """What one request produced (TokenOutput-like)."""

    token_ids: list[int]
    log_probs: list[float] | None
    stop_reason: str  # "completed" | "aborted" (verl's vocabulary)
    finish_reason: str  # "stop" | "length" | "abort" (vLLM's vocabulary)


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    max_tokens: int
    request_id: str | None
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    generated: list[int] = field(default_factory=list)
    log_probs: list[float] = field(default_factory=list)
    generator: torch.Generator | None = None  # from params.seed


def _resolve(request: _Request, output: GenerationOutput | BaseException) -> None:
    if request.future.done():  # the caller was cancelled
        return
    if isinstance(output, BaseException):
        request.future.set_exception(output)
    else:
        request.future.set_result(output)


def _as_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    aliases = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}
    resolved = getattr(torch, aliases.get(str(dtype), str(dtype)), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return resolved


class HFGenerationEngine:
    """A transformers model behind an async, batching `generate(prompt_ids, sampling_params)`.

    Args:
        model: an HF model folder (str/PathLike) or an already built `PreTrainedModel`.
        tokenizer: folder, tokenizer object or None (only EOS/pad ids are taken from it).
        dtype: weights/compute dtype when `model` is a folder.
        device: torch device; default CUDA when available, else CPU.
        max_batch_size: most rows decoded together.
        default_max_tokens: budget when a request names none (else the model's context length).
        batch_wait_s: how long the scheduler waits after the first arrival so concurrent requests join it.
        seed: seeds the sampling generator (None: nondeterministic).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        dtype: str | torch.dtype = "float32",
        device: str | torch.device | None = None,
        max_batch_size: int = 32,
        default_max_tokens: int | None = None,
        max_model_len: int | None = None,
        batch_wait_s: float = 0.005,
        attn_implementation: str = "sdpa",
        trust_remote_code: bool = False,
        seed: int | None = None,
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if isinstance(model, (str, os.PathLike)):
            model = AutoModelForCausalLM.from_pretrained(
                str(model), dtype=_as_dtype(dtype), attn_implementation=attn_implementation,
                trust_remote_code=trust_remote_code,
            )
        self.model = model.to(self.device).eval()
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer), trust_remote_code=trust_remote_code)
        self.tokenizer = tokenizer
        self.eos_token_ids = self._eos_ids(self.model, tokenizer)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = int(pad if pad is not None else (min(self.eos_token_ids) if self.eos_token_ids else 0))
        self.max_batch_size = int(max_batch_size)
        self.max_model_len = int(max_model_len or getattr(self.model.config, "max_position_embeddings", 4096))
        self.default_max_tokens = default_max_tokens
        self.batch_wait_s = batch_wait_s
        self._generator = torch.Generator(device=self.device)
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(int(seed))
        self._params = dict(self.model.state_dict(keep_vars=True))  # HF names -> live tensors (tied ones twice)
        self._model_lock = threading.Lock()  # one batch or one weight update at a time
        self._abort = threading.Event()
        self._pending: list[_Request] = []
        self._wakeup: asyncio.Event | None = None
        self._scheduler: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ generation
    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: SamplingParams | Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> GenerationOutput:
        params = sampling_params if isinstance(sampling_params, SamplingParams) else SamplingParams.from_dict(sampling_params)
        prompt_ids = [int(t) for t in prompt_ids]
        if not prompt_ids:
            raise ValueError("prompt_ids is empty")
        room = self.max_model_len - len(prompt_ids)
        if room < 1:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens leaves no room within max_model_len={self.max_model_len}")
        budget = params.max_tokens if params.max_tokens is not None else (self.default_max_tokens or room)
        loop = asyncio.get_running_loop()
        request = _Request(prompt_ids, params, max(1, min(int(budget), room)), request_id, loop.create_future(), loop)
        if params.seed is not None:
            request.generator = torch.Generator(device=self.device).manual_seed(params.seed)
        self._ensure_scheduler(loop)
        self._pending.append(request)
        self._wakeup.set()
        return await request.future

    def abort_all(self) -> int:
        """Finish every queued and running request now with stop_reason "aborted" (partial tokens kept)."""
        pending, self._pending = self._pending, []
        for request in pending:
            request.loop.call_soon_threadsafe(_resolve, request, self._output(request, "abort"))
        self._abort.set()
        return len(pending)

    def _ensure_scheduler(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is loop and self._scheduler is not None and not self._scheduler.done():
            return
        self._loop, self._wakeup = loop, asyncio.Event()
        self._scheduler = loop.create_task(self._schedule())

    async def _schedule(self) -> None:
        while True:
            await self._wakeup.wait()
            if self.batch_wait_s:
                await asyncio.sleep(self.batch_wait_s)  # let requests issued together join this batch
            self._wakeup.clear()
            while self._pending:
                batch, self._pending = self._pending[: self.max_batch_size], self._pending[self.max_batch_size :]
                self._abort.clear()
                try:
                    await asyncio.to_thread(self._run_batch, batch)
                except asyncio.CancelledError:  # the event loop is shutting down
                    raise
                except Exception as exc:  # answer every caller, keep the scheduler alive
                    logger.exception("HFGenerationEngine batch failed")
                    for request in batch:
                        request.loop.call_soon_threadsafe(_resolve, request, exc)

    def _output(self, request: _Request, finish_reason: str) -> GenerationOutput:
        return GenerationOutput(
            token_ids=list(request.generated),
            log_probs=list(request.log_probs) if request.params.logprobs else None,
            stop_reason="aborted" if finish_reason == "abort" else "completed",
            finish_reason=finish_reason,
        )

    @torch.inference_mode()
    def _run_batch(self, batch: list[_Request]) -> None:
        with self._model_lock:
            self._decode(batch)

    def _decode(self, batch: list[_Request]) -> None:
        device = self.device
        lengths = [len(r.prompt_ids) for r in batch]
        width = max(lengths)
        input_ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, request in enumerate(batch):  # left padding
            input_ids[row, width - lengths[row] :] = torch.tensor(request.prompt_ids)
            attention_mask[row, width - lengths[row] :] = 1
        input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         use_cache=True, logits_to_keep=1)
        cache, logits = out.past_key_values, out.logits[:, -1, :].float()
        next_position = position_ids[:, -1] + 1
        active = list(batch)
        stop_sets = {id(r): set(r.params.stop_token_ids) | (set() if r.params.ignore_eos else set(self.eos_token_ids))
                     for r in batch}
        while True:
            tokens, log_probs = self._sample(logits, active)
            keep: list[int] = []
            for row, request in enumerate(active):
                token = int(tokens[row])
                request.generated.append(token)
                request.log_probs.append(float(log_probs[row]))
                if token in stop_sets[id(request)] or self._hit_stop_string(request):
                    request.loop.call_soon_threadsafe(_resolve, request, self._output(request, "stop"))
                elif len(request.generated) >= request.max_tokens:
                    request.loop.call_soon_threadsafe(_resolve, request, self._output(request, "length"))
                else:
                    keep.append(row)
            if keep and self._abort.is_set():
                for row in keep:
                    request = active[row]
                    request.loop.call_soon_threadsafe(_resolve, request, self._output(request, "abort"))
                return
            if not keep:
                return
            if len(keep) < len(active):  # retire finished rows: drop them from the cache and the masks
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                attention_mask, next_position, tokens = attention_mask[index], next_position[index], tokens[index]
                active = [active[row] for row in keep]
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((len(active), 1))], dim=1)
            out = self.model(input_ids=tokens[:, None], attention_mask=attention_mask,
                             position_ids=next_position[:, None], past_key_values=cache, use_cache=True)
            cache, logits = out.past_key_values, out.logits[:, -1, :].float()
            next_position = next_position + 1

    def _hit_stop_string(self, request: _Request) -> bool:
        stops = request.params.stop
        if not stops:
            return False
        if self.tokenizer is None:
            raise ValueError("stop strings need the engine to have a tokenizer")
        window = max(len(stop) for stop in stops) + 1  # every token decodes to >= 1 character
        tail = self.tokenizer.decode(request.generated[-window:], skip_special_tokens=False)
        return any(stop in tail for stop in stops)

    def _sample(self, logits: torch.Tensor, requests: list[_Request]) -> tuple[torch.Tensor, torch.Tensor]:
        """One token per row with that row's own parameters; returns (tokens, chosen log-probs)."""
        device = logits.device
        temperature = torch.tensor([r.params.temperature for r in requests], device=device, dtype=torch.float32)
        greedy = temperature <= _GREEDY_TEMPERATURE
        scaled = logits / torch.where(greedy, torch.ones_like(temperature), temperature)[:, None]
        all_log_probs = torch.log_softmax(scaled, dim=-1)

        processed = scaled
        penalised = [row for row, r in enumerate(requests) if r.params.repetition_penalty != 1.0]
        if penalised:
            processed = scaled.clone()
            for row in penalised:  # vLLM/HF semantics over prompt + generated tokens
                request = requests[row]
                seen = torch.tensor(sorted(set(request.prompt_ids) | set(request.generated)), device=device)
                values = processed[row, seen]
                penalty = request.params.repetition_penalty
                processed[row, seen] = torch.where(values > 0, values / penalty, values * penalty)

        tokens = processed.argmax(dim=-1)
        sampled_rows = (~greedy).nonzero().flatten()
        if len(sampled_rows):
            candidates = processed[sampled_rows]
            sampled = [requests[row] for row in sampled_rows.tolist()]
            top_k = [request.params.top_k for request in sampled]
            top_p = [request.params.top_p for request in sampled]
            if any(0 < k < candidates.shape[-1] for k in top_k) or any(p < 1.0 for p in top_p):
                candidates = self._filter_top_k_top_p(candidates, top_k, top_p)
            tokens[sampled_rows] = self._draw(torch.softmax(candidates, dim=-1), sampled)
        chosen = all_log_probs.gather(-1, tokens[:, None]).flatten()
        return tokens, chosen

    def _draw(self, probs: torch.Tensor, requests: list[_Request]) -> torch.Tensor:
        """One token per row of `probs`: seeded requests from their own generator (so a seed gives the same tokens
        whatever else is in the batch), the others together from the engine's."""
        drawn = torch.empty(len(requests), dtype=torch.long, device=probs.device)
        shared = [i for i, request in enumerate(requests) if request.generator is None]
        if shared:
            index = torch.tensor(shared, device=probs.device)
            drawn[index] = torch.multinomial(probs[index], 1, generator=self._generator).flatten()
        for i, request in enumerate(requests):
            if request.generator is not None:
                drawn[i] = torch.multinomial(probs[i : i + 1], 1, generator=request.generator)[0, 0]
        return drawn

    @staticmethod
    def _filter_top_k_top_p(logits: torch.Tensor, top_k: list[int], top_p: list[float]) -> torch.Tensor:
        vocab = logits.shape[-1]
        sorted_logits, sorted_index = logits.sort(dim=-1, descending=True)
        ranks = torch.arange(vocab, device=logits.device)[None, :]
        k = torch.tensor([k if 0 < k < vocab else vocab for k in top_k], device=logits.device)[:, None]
        remove = ranks >= k
        p = torch.tensor(top_p, device=logits.device, dtype=torch.float32)[:, None]
        probs = torch.softmax(sorted_logits.masked_fill(remove, float("-inf")), dim=-1)
        remove |= (probs.cumsum(-1) - probs) > p  # keep the smallest prefix reaching p (always the first)
        sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
        return torch.full_like(logits, float("-inf")).scatter(-1, sorted_index, sorted_logits)

    # ------------------------------------------------------------------ weights
    def update_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> int:
        """Copy `(hf_name, tensor)` pairs into the model in place; returns how many were copied.

        Names are the HF state-dict names; an unknown name raises KeyError. Waits for a running batch.
        """
        count = 0
        with self._model_lock, torch.no_grad():
            for name, tensor in named_tensors:
                target = self._params.get(name)
                if target is None:
                    known = ", ".join(list(self._params)[:5])
                    raise KeyError(f"weight {name!r} is not a parameter of the rollout model (e.g. {known}, ...)")
                if tuple(target.shape) != tuple(tensor.shape):
                    raise ValueError(f"weight {name!r}: shape {tuple(tensor.shape)} != {tuple(target.shape)}")
                target.copy_(tensor.to(device=target.device, dtype=target.dtype))
                count += 1
        return count

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> int:
        """`update_weights` over a whole state dict; with `strict`, every parameter must be present."""
        if strict:
            missing = sorted(set(self._params) - set(state_dict))
            if missing:
                raise KeyError(f"state dict misses {len(missing)} weights, e.g. {missing[:5]}")
        return self.update_weights(state_dict.items())

    @property
    def weight_names(self) -> list[str]:
        return list(self._params)

    def param_checksum(self) -> str:
        """sha256 over every parameter's bytes (in name order; tied tensors once)."""
        digest, seen = hashlib.sha256(), set()
        with self._model_lock:
            for name in sorted(self._params):
                tensor = self._params[name].detach()
                if tensor.data_ptr() in seen:
                    continue
                seen.add(tensor.data_ptr())
                digest.update(name.encode())
                digest.update(tensor.cpu().contiguous().view(torch.uint8).numpy().tobytes())
        return digest.hexdigest()

    @staticmethod
    def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
        ids: set[int] = set()
        generation_config = getattr(model, "generation_config", None)
        for source in (getattr(generation_config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
            if source is None:
                continue
            ids.update(int(t) for t in (source if isinstance(source, (list, tuple)) else [source]))
        return sorted(ids)
