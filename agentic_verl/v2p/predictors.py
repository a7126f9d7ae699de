"""Click predictors: one interface for every way a grounding model is asked where to click.

    predictor = open_predictor(model="outputs/v2p/hf")       # a V2P folder -> PointerPredictor
    prediction = predictor.predict(screenshot, "Open settings")
    prediction.point                                          # (x, y) in the screenshot's own pixels

- `PointerPredictor`: a V2P model in-process (transformers); one forward pass, the pointer distribution's
  highest-peak region centroid (gui.inference); the heatmap comes back too.
- `GenerativePredictor`: any other Qwen2.5-VL folder in-process: greedy generation of a text click.
- `EndpointPredictor`: a model behind an OpenAI-compatible chat-completions server (`vllm serve`), image sent as a
  base64 data URL.
Text clicks are parsed with `rewards.gui.parse_click` (never executed). Qwen2.5-VL answers in pixels of the image
it saw, i.e. the screenshot after `smart_resize` with the processor's min/max pixels, so `coord_system="absolute"`
clicks are scaled back by original / resized size; `normalized` (0-1) and `thousandths` (0-1000) are scaled by the
original size. The prompt is the `gui_grounding` agent loop's (agent_loops/prompts.py), which states that size.
"""

from __future__ import annotations

import base64
import io
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agentic_verl.net import auth_headers, check_model_or_endpoint, check_served_model
from agentic_verl.rewards.gui import QWEN25VL_MAX_PIXELS, QWEN25VL_MIN_PIXELS, parse_click, smart_resize

COORD_SYSTEMS = ("absolute", "normalized", "thousandths")


@dataclass
class Prediction:
    point: tuple[float, float] | None  # original-screenshot pixels; None when no click came back
    text: str | None = None  # the model's answer (text predictors)
    heatmap: object = field(default=None, repr=False)  # (rows, cols) pointer probabilities (pointer models)
    input_size: tuple[int, int] | None = None  # (width, height) of the image the model saw
    failure: str | None = None  # no_click | request_error
    truncated: bool | None = None  # text predictors: the answer hit the token limit (None: not a text answer)


class ClickPredictor(Protocol):
    name: str

    def predict(self, image, instruction: str) -> Prediction: ...


def _map_text_click(text: str, original: tuple[int, int], input_size: tuple[int, int], coord_system: str
                    ) -> Prediction:
    click = parse_click(text)
    if click is None:
        return Prediction(None, text=text, input_size=input_size, failure="no_click")
    x, y = click.point
    if coord_system == "absolute":
        point = (x * original[0] / input_size[0], y * original[1] / input_size[1])
    else:
        unit = 1.0 if coord_system == "normalized" else 1000.0
        point = (x * original[0] / unit, y * original[1] / unit)
    return Prediction(point, text=text, input_size=input_size)


def _prompt_after_image(instruction: str, input_size: tuple[int, int]) -> str:
    """The `gui_grounding` prompt's text after its `<image>` placeholder, newline included: verl's datasets split the
    prompt there (image item, then this text), so a model trained through verl (`data gui` rows, SFT or GRPO) is
    asked here with the same tokens."""
    from agentic_verl.agent_loops.prompts import gui_grounding_prompt

    before, image, after = gui_grounding_prompt(instruction, *input_size).partition("<image>")
    if not image or before:
        raise AssertionError("the gui_grounding prompt must start with its <image> placeholder")
    return after


def _resized(image, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    h, w = smart_resize(image.size[1], image.size[0], 28, min_pixels, max_pixels)
    return w, h


def _processor_pixels(processor) -> tuple[int, int]:
    size = getattr(processor.image_processor, "size", None) or {}
    low = size.get("shortest_edge") if hasattr(size, "get") else getattr(size, "shortest_edge", None)
    high = size.get("longest_edge") if hasattr(size, "get") else getattr(size, "longest_edge", None)
    return int(low or QWEN25VL_MIN_PIXELS), int(high or QWEN25VL_MAX_PIXELS)


def _load(model: str | Path, dtype: str, min_pixels: int | None, max_pixels: int | None):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    import agentic_verl.v2p.model  # noqa: F401  (registers the V2P model with the Auto classes)

    kwargs = {k: v for k, v in (("min_pixels", min_pixels), ("max_pixels", max_pixels)) if v is not None}
    processor = AutoProcessor.from_pretrained(str(model), **kwargs)
    torch_dtype = getattr(torch, dtype) if dtype != "auto" else (
        torch.bfloat16 if torch.cuda.is_available() else torch.float32)
    loaded = AutoModelForImageTextToText.from_pretrained(str(model), dtype=torch_dtype)
    return loaded.to("cuda" if torch.cuda.is_available() else "cpu").eval(), processor


class PointerPredictor:
    def __init__(self, model: str | Path, dtype: str = "auto", min_pixels: int | None = None,
                 max_pixels: int | None = None, threshold: float | None = None):
        self.name = Path(model).name
        self.model, self.processor = _load(model, dtype, min_pixels, max_pixels)
        self.threshold = threshold

    def predict(self, image, instruction: str) -> Prediction:
        from agentic_verl.v2p.inference import predict_click

        click = predict_click(self.model, self.processor, image, instruction, threshold=self.threshold)
        return Prediction(click.point, heatmap=click.heatmap, input_size=click.input_size)


class GenerativePredictor:
    def __init__(self, model: str | Path, dtype: str = "auto", min_pixels: int | None = None,
                 max_pixels: int | None = None, max_tokens: int = 64, coord_system: str = "absolute"):
        self.name = Path(model).name
        self.model, self.processor = _load(model, dtype, min_pixels, max_pixels)
        self.max_tokens, self.coord_system = max_tokens, coord_system

    def predict(self, image, instruction: str) -> Prediction:
        import torch

        image = image.convert("RGB")
        input_size = _resized(image, *_processor_pixels(self.processor))
        prompt = _prompt_after_image(instruction, input_size)
        messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": prompt}]}]
        text = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = self.processor(text=[text], images=[image], return_tensors="pt").to(self.model.device)
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_tokens, do_sample=False)
        new_tokens = out[0, inputs["input_ids"].shape[1]:]
        answer = self.processor.tokenizer.decode(new_tokens, skip_special_tokens=True)
        prediction = _map_text_click(answer, image.size, input_size, self.coord_system)
        eos = self.model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos])
        prediction.truncated = len(new_tokens) >= self.max_tokens and int(new_tokens[-1]) not in eos
        return prediction


class EndpointPredictor:
    """POST /v1/chat/completions with the screenshot as a data URL; timeouts and 5xx are retried, then the sample
    counts as `request_error` (the evaluation goes on); an unreachable server fails in `check()` first."""

    def __init__(self, url: str, model_name: str, min_pixels: int = QWEN25VL_MIN_PIXELS,
                 max_pixels: int = QWEN25VL_MAX_PIXELS, max_tokens: int = 64, coord_system: str = "absolute",
                 timeout_s: float = 120.0, max_retries: int = 2, temperature: float = 0.0,
                 api_key_env: str | None = None):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must be an http(s) URL, got {url!r}")
        if coord_system not in COORD_SYSTEMS:
            raise ValueError(f"unknown coord_system {coord_system!r}; known: {', '.join(COORD_SYSTEMS)}")
        self.base = url.rstrip("/").removesuffix("/v1")
        self.name = self.model_name = model_name
        self.min_pixels, self.max_pixels = min_pixels, max_pixels
        self.max_tokens, self.coord_system, self.temperature = max_tokens, coord_system, temperature
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self._headers = auth_headers(api_key_env, url=self.base)  # the bearer token (agentic_verl.net), never in results

    def check(self) -> None:
        check_served_model(self.base, self.model_name, min(self.timeout_s, 30), self._headers)

    def predict(self, image, instruction: str) -> Prediction:
        image = image.convert("RGB")
        input_size = _resized(image, self.min_pixels, self.max_pixels)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        data_url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        prompt = _prompt_after_image(instruction, input_size)
        body = {"model": self.model_name, "max_tokens": self.max_tokens, "temperature": self.temperature,
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url}},
                                                          {"type": "text", "text": prompt}]}]}
        try:
            reply = self._post(body)
        except RuntimeError as exc:
            return Prediction(None, text=str(exc), input_size=input_size, failure="request_error")
        choice = (reply.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content") or ""
        prediction = _map_text_click(text, image.size, input_size, self.coord_system)
        prediction.truncated = choice.get("finish_reason") == "length"
        return prediction

    def _post(self, body: dict) -> dict:
        request = urllib.request.Request(f"{self.base}/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", **self._headers})
        for attempt in range(self.max_retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.load(response)
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == self.max_retries:
                    raise RuntimeError(f"HTTP {exc.code}: {exc.read()[:500]!r}") from None
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                if attempt == self.max_retries:
                    raise RuntimeError(f"no answer after {attempt + 1} tries: {exc}") from None
            time.sleep(0.5 * 2 ** attempt)
        raise AssertionError("unreachable")


def is_pointer_model(folder: str | Path) -> bool:
    config = Path(folder) / "config.json"
    return config.is_file() and json.loads(config.read_text()).get("model_type") == "v2p_qwen2_5_vl"


def open_predictor(model: str | None = None, endpoint: str | None = None, model_name: str | None = None, *,
                   dtype: str = "auto", min_pixels: int | None = None, max_pixels: int | None = None,
                   max_tokens: int = 64, coord_system: str = "absolute", threshold: float | None = None,
                   api_key_env: str | None = None) -> ClickPredictor:
    """A V2P folder -> PointerPredictor; another model folder -> GenerativePredictor; endpoint -> EndpointPredictor."""
    check_model_or_endpoint(model, endpoint, model_name)
    if endpoint is not None:
        return EndpointPredictor(endpoint, model_name, min_pixels or QWEN25VL_MIN_PIXELS,
                                 max_pixels or QWEN25VL_MAX_PIXELS, max_tokens=max_tokens, coord_system=coord_system,
                                 api_key_env=api_key_env)
    if is_pointer_model(model):
        return PointerPredictor(model, dtype, min_pixels, max_pixels, threshold)
    return GenerativePredictor(model, dtype, min_pixels, max_pixels, max_tokens, coord_system)
