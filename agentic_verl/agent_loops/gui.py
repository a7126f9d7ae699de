"""`gui_grounding`: one screenshot, one instruction, one click, as a single-turn verl agent loop (Qwen2.5-VL style).

Data: verl's RLHFDataset turns the `<image>` placeholder of the row's `prompt` into an image content item from the
row's `images` column (`prompts.gui_grounding_messages` writes such prompts). The loop extracts the images with
verl's own `process_multi_modal_info` (qwen_vl_utils) and renders the prompt with verl's multimodal token builder,
so the image pad tokens are the processor's; both need a VL model's processor. It returns the images as
`multi_modal_data` and the processor kwargs it used, from which verl's worker recomputes the pixel features and the
M-RoPE position ids the trainer uses (tests/agent_loops/test_gui_vl.py checks them against verl's own
`get_rope_index` and against the server's log-probs).

The model answers in the pixel coordinates of the image it saw, i.e. the screenshot after Qwen2.5-VL's
`smart_resize` (sides multiples of `factor`=28, area within the min/max pixels of the loop's config, else of
`data.mm_processor_kwargs`, else of the processor). The loop parses the
click with `agentic_verl.rewards.gui.parse_click` (never executed) and maps it back:
x_original = x * W / w_input, y_original = y * H / h_input. It stores `image_size` = [W, H] and
`input_size` = [w_input, h_input] as top-level extra fields (verl's reward manager merges extra fields into
`extra_info`, where the GUI rewards `gui_click_in_box` / `gui_gaussian_point` read exactly these keys), and
`extra_fields["gui_grounding"]` = {click, click_original, failure}.

Failures (trace.py taxonomy): truncated_by_length (hit the token limit), parse_error (a click-like text that does
not parse, e.g. `click(x=`), no_call (no click at all), bad_arguments (a click whose coordinates cannot be mapped to
the screenshot: `x=1e308` overflows; `click` and `click_original` are then None). A parsed click is recorded as
one tool call `click` in the trace (never executed), so `agent/num_tool_calls` counts the clicks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from agentic_verl.agent_loops._common import (
    Trajectory,
    eos_token_ids,
    generate_single_turn,
    output_extra_fields,
    pop_config_kwargs,
    resolve_config,
)
from agentic_verl.agent_loops.sampling_seeds import start_trajectory
from agentic_verl.agent_loops.trace import TrajectoryTrace
from agentic_verl.rewards.gui import QWEN25VL_MAX_PIXELS, QWEN25VL_MIN_PIXELS, parse_click, smart_resize

NAME = "gui_grounding"


@dataclass
class GuiGroundingConfig:
    max_tokens: int = 128
    factor: int = 28  # patch size x merge size of Qwen2.5-VL
    # None: data.mm_processor_kwargs' bounds, else the processor's (else Qwen2.5-VL's); set them only to describe a
    # processor that resizes differently from what both of those say
    min_pixels: int | None = None
    max_pixels: int | None = None


def image_size(image: Any) -> tuple[int, int] | None:
    """(width, height) of a PIL image, a path, or a dict with "image"/"bytes"; None when unknown."""
    from io import BytesIO

    from PIL import Image

    if isinstance(image, dict):
        image = image.get("image") or (BytesIO(image["bytes"]) if image.get("bytes") else None)
    if hasattr(image, "size") and isinstance(image.size, tuple):
        return tuple(int(v) for v in image.size)
    if image is None:
        return None
    try:
        with Image.open(image) as opened:  # reads the header only
            return opened.size
    except Exception:
        return None


def _get(source: Any, key: str) -> Any:
    """source[key] for a mapping, else the attribute (None when absent)."""
    if source is None:
        return None
    return source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)


def _first_image(messages: list[dict]) -> Any:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for item in content:
                if isinstance(item, dict) and item.get("type") == "image":
                    return item.get("image", item)
    return None


def map_click(point: tuple[float, float], input_size, original) -> list[float] | None:
    """The click in the original screenshot's pixels (x * W / w_input, y * H / h_input); None when that is not a
    finite number (a coordinate near the float limit, which the model may write, overflows).

    >>> map_click((10.0, 20.0), (100, 100), (200, 50)), map_click((1e308, 1.0), (1344, 756), (1920, 1080))
    ([20.0, 10.0], None)
    """
    mapped = [point[0] * original[0] / input_size[0], point[1] * original[1] / input_size[1]]
    return mapped if all(math.isfinite(v) for v in mapped) else None


def classify_click(text: str, hit_limit: bool):
    """(ParsedClick or None, failure or None).

    >>> classify_click("pyautogui.click(x=10, y=20)", False)[0].point
    (10.0, 20.0)
    >>> classify_click("pyautogui.click(x=", False)
    (None, 'parse_error')
    >>> classify_click("I do not see it.", False)
    (None, 'no_call')
    """
    if hit_limit:
        return None, "truncated_by_length"
    click = parse_click(text)
    if click is not None:
        return click, None
    return None, "parse_error" if ("click" in text.lower() or "(" in text or "[" in text) else "no_call"


@register(NAME)
class GuiGroundingAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        self._loop_kwargs = pop_config_kwargs(GuiGroundingConfig, kwargs)
        self.agent_name = str(kwargs.pop("name", NAME))
        kwargs.pop("tools", None)
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self._eos_ids = eos_token_ids(self.tokenizer)

    def _pixel_bounds(self, cfg: GuiGroundingConfig, mm_processor_kwargs: Mapping[str, Any]) -> tuple[int, int]:
        """min/max pixels the processor resizes to: the loop's config, else `data.mm_processor_kwargs` (which verl
        hands the processor on every call: `size` = {"shortest_edge": min, "longest_edge": max}, or
        min_pixels/max_pixels), else the processor's own, else Qwen2.5-VL's."""
        image_processor = getattr(self.processor, "image_processor", None)

        def bound(source, size_key: str, pixels_key: str):
            size = _get(source, "size")  # newer processors: {"shortest_edge": min, "longest_edge": max}
            return _get(size, size_key) or _get(source, pixels_key)

        low = (cfg.min_pixels or bound(mm_processor_kwargs, "shortest_edge", "min_pixels")
               or bound(image_processor, "shortest_edge", "min_pixels"))
        high = (cfg.max_pixels or bound(mm_processor_kwargs, "longest_edge", "max_pixels")
                or bound(image_processor, "longest_edge", "max_pixels"))
        return int(low or QWEN25VL_MIN_PIXELS), int(high or QWEN25VL_MAX_PIXELS)

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        sampling_params = start_trajectory(self.rollout_config, kwargs).params(sampling_params)  # before any await
        extra_info = kwargs.get("extra_info") or {}
        cfg = resolve_config(GuiGroundingConfig, NAME, self.rollout_config, self._loop_kwargs, extra_info)
        messages = list(kwargs["raw_prompt"])
        request_id = uuid4().hex
        trace = TrajectoryTrace(request_id, agent_name=self.agent_name)

        original = image_size(_first_image(messages))
        if original is None and extra_info.get("image_size") is not None:
            original = tuple(int(v) for v in extra_info["image_size"])
        multi_modal_data = await self.process_multi_modal_info(messages)
        images = multi_modal_data.get("images")
        if not images:  # a data/config error, not a model output: say so loudly
            raise ValueError("gui_grounding needs an image in the prompt (an `<image>` placeholder and an `images` "
                             "column) and a vision-language model's processor; got none")
        self._assert_mm_supported(True)  # a VL processor + token builder, or verl's clear error
        mm_processor_kwargs = self._get_mm_processor_kwargs()
        prompt_ids = await self.ct_build_initial_tokens(messages, images=images, mm_inputs_out={})
        input_size = None
        if images:
            seen = image_size(images[0])  # what the processor gets; it resizes this with smart_resize
            if seen is not None:
                low, high = self._pixel_bounds(cfg, mm_processor_kwargs)
                h, w = smart_resize(seen[1], seen[0], cfg.factor, low, high)
                input_size = (w, h)
        if original is None:
            original = input_size

        traj = Trajectory(prompt_ids, self.response_length)
        turn = await generate_single_turn(
            self.server_manager, self.tokenizer, request_id=request_id, prompt_ids=prompt_ids,
            sampling_params=sampling_params, max_tokens=min(cfg.max_tokens, self.response_length),
            eos_ids=self._eos_ids, traj=traj, trace=trace, image_data=images, mm_processor_kwargs=mm_processor_kwargs,
        )
        text, latency, server_fields = turn.text, turn.latency_s, turn.server_fields
        click, failure = classify_click(text, turn.hit_limit)
        if failure:
            trace.record_failure(failure)
        click_original = None
        if click is not None:
            if original and input_size:
                click_original = map_click(click.point, input_size, original)
                failure = None if click_original is not None else "bad_arguments"  # e.g. y=1e308 overflows
            trace.add_tool_call("click", {"x": click.point[0], "y": click.point[1]}, "", 0.0, failure=failure)
            if failure:
                click = None

        result = AgentLoopOutput(
            **traj.output_fields(),
            multi_modal_data=multi_modal_data,
            mm_processor_kwargs=mm_processor_kwargs,
            num_turns=2,
            metrics={"generate_sequences": latency},
            extra_fields=output_extra_fields(
                server_fields, NAME,
                {"click": list(click.point) if click else None, "click_original": click_original, "failure": failure},
                image_size=list(original) if original else None,
                input_size=list(input_size) if input_size else None,
            ),
        )
        return trace.finalize(result, tokenizer=self.tokenizer, global_step=server_fields.get("global_steps"))
