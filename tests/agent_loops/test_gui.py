"""gui_grounding: one screenshot, one click.

What runs for real: the loop as verl constructs it, verl's Qwen-VL continuous-token builder (QwenVLContinuousTokenBuilder,
chosen from model_type qwen2_5_vl), the real Qwen tokenizer and chat template, scripted token streams, click parsing
and smart_resize from agentic_verl.rewards.gui, the GUI rewards on the decoded response.
What is a stand-in (no VL model or torchvision offline): the Qwen2.5-VL *processor* (chat template + expanding each
<|image_pad|> to (h/28)*(w/28) tokens of the smart-resized image, as the real one does; no pixel values) and the
dataset's qwen_vl_utils image extraction (resizes with smart_resize, as qwen_vl_utils does). Not exercised: real
pixel features, M-RoPE position ids, a VL model's generation.
"""

from __future__ import annotations

import asyncio

import pytest
from agent_loop_helpers import ScriptedServer, build_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants
from gui_stand_ins import (
    BOX,
    MAX_PIXELS,
    MIN_PIXELS,
    SAMPLING,
    SCREEN,
    TARGET,
    VL_UTILS_MAX_PIXELS,
    DatasetStandIn,
    QwenVLProcessorStandIn,
    screenshot_messages,
)

from agentic_verl.agent_loops.gui import classify_click
from agentic_verl.rewards.gui import gui_click_in_box, smart_resize


def _run(qwen_dir, tok, turns, response_length=64, size_dict=False, processor_max_pixels=MAX_PIXELS,
         data_overrides=(), **fields):
    overrides = [f"+actor_rollout_ref.rollout.custom.gui_grounding.{k}={v}" for k, v in fields.items()]
    config = verl_config(qwen_dir, *overrides, *data_overrides, prompt_length=2048, response_length=response_length)
    server = ScriptedServer(tok, turns)
    processor = QwenVLProcessorStandIn(tok, size_dict=size_dict, max_pixels=processor_max_pixels)

    async def go():
        loop = build_loop("gui_grounding", config, server, tok, processor=processor, hf_model_type="qwen2_5_vl",
                          dataset_cls=DatasetStandIn)
        return await loop.run(dict(SAMPLING), **sample(screenshot_messages(), ground_truth=BOX))

    return asyncio.run(go()), server, processor


# where the processor's bounds come from: its own attributes (two conventions), or data.mm_processor_kwargs (which
# verl passes to every processor call) over a processor whose own bound would not resize
BOUNDS = {
    "min_max_pixels": {"size_dict": False},
    "size_dict": {"size_dict": True},
    "mm_processor_kwargs": {"processor_max_pixels": VL_UTILS_MAX_PIXELS, "data_overrides": [
        f"+data.mm_processor_kwargs.size.shortest_edge={MIN_PIXELS}",
        f"+data.mm_processor_kwargs.size.longest_edge={MAX_PIXELS}"]},
}


@pytest.mark.parametrize("bounds", sorted(BOUNDS))
def test_click_is_mapped_back_to_the_original_screenshot(bounds, qwen_dir, qwen_tokenizer):
    tok = qwen_tokenizer
    # the pipeline: qwen_vl_utils resizes (its bounds), then the processor resizes that (its bounds)
    h_seen, w_seen = smart_resize(SCREEN[1], SCREEN[0], 28, MIN_PIXELS, VL_UTILS_MAX_PIXELS)
    h_in, w_in = smart_resize(h_seen, w_seen, 28, MIN_PIXELS, MAX_PIXELS)
    assert (h_in, w_in) != (h_seen, w_seen)  # so the processor's bounds matter in this test
    x, y = TARGET[0] * w_in / SCREEN[0], TARGET[1] * h_in / SCREEN[1]  # TARGET in the model's pixels
    out, server, processor = _run(qwen_dir, tok, [f"pyautogui.click(x={x:.0f}, y={y:.0f})<|im_end|>"],
                                  **BOUNDS[bounds])

    # the prompt carries exactly the processor's image pad tokens for the resized screenshot
    assert out.prompt_ids.count(tok.convert_tokens_to_ids("<|image_pad|>")) == (h_in // 28) * (w_in // 28)
    assert "Click the OK button" in tok.decode(out.prompt_ids)
    # the server got the image with the prompt; the response is the policy's tokens, all mask 1
    [image] = server.calls[0]["image_data"]
    assert image.size == (w_seen, h_seen)
    assert out.response_mask == [1] * len(out.response_ids) and out.response_ids == server.outputs[0].token_ids
    check_token_invariants(out, server, tok)
    assert out.multi_modal_data["images"] == [image]

    fields = out.extra_fields
    assert fields["image_size"] == list(SCREEN) and fields["input_size"] == [w_in, h_in]
    click = fields["gui_grounding"]["click_original"]
    assert click == pytest.approx(list(TARGET), abs=2.0)
    assert fields["gui_grounding"]["failure"] is None
    # the reward path: verl merges extra fields into extra_info; the GUI reward maps the click the same way
    solution = tok.decode(out.response_ids, skip_special_tokens=True)
    assert gui_click_in_box(solution, BOX, {"image_size": fields["image_size"], "input_size": fields["input_size"]})[
        "score"] == 1.0
    # without the mapping the same click (model pixels) would land elsewhere: the mapping matters
    assert gui_click_in_box(solution, [x - 1, y - 1, x + 1, y + 1], {})["score"] == 1.0


CASES = [
    ("no_click", "I cannot find that button.<|im_end|>", {}, "no_call"),
    ("broken_click", "pyautogui.click(x=<|im_end|>", {}, "parse_error"),
    ("empty", [], {}, "no_call"),
    ("too_long", "Let me look " * 40, {"max_tokens": 16}, "truncated_by_length"),
]


@pytest.mark.parametrize("name,turn,fields,failure", CASES, ids=[c[0] for c in CASES])
def test_failures(name, turn, fields, failure, qwen_dir, qwen_tokenizer):
    out, server, _ = _run(qwen_dir, qwen_tokenizer, [turn], **fields)
    assert out.extra_fields["gui_grounding"] == {"click": None, "click_original": None, "failure": failure}
    metrics = out.extra_fields["agent_metrics"]
    assert {k for k, v in metrics.items() if k.startswith("failure/") and v} == {f"failure/{failure}"}
    check_token_invariants(out, server, qwen_tokenizer)


def test_a_click_off_every_screen_is_bad_arguments_not_an_infinite_click(qwen_dir, qwen_tokenizer):
    """y=1e308 parses (finite), but mapped to the original screenshot it overflows to inf: the loop reports
    bad_arguments and no click, instead of an infinite click_original in the extra fields."""
    tok = qwen_tokenizer
    out, server, _ = _run(qwen_dir, tok, ["pyautogui.click(x=10, y=1e308)<|im_end|>"])
    assert out.extra_fields["gui_grounding"] == {"click": None, "click_original": None, "failure": "bad_arguments"}
    metrics = out.extra_fields["agent_metrics"]
    assert {k for k, v in metrics.items() if k.startswith("failure/") and v} == {"failure/bad_arguments"}
    assert metrics["num_tool_calls"] == 1 and metrics["failed_tool_calls"] == 1
    check_token_invariants(out, server, tok)


def test_a_parsed_click_counts_as_one_tool_call(qwen_dir, qwen_tokenizer):
    out, _, _ = _run(qwen_dir, qwen_tokenizer, ["pyautogui.click(x=10, y=20)<|im_end|>"])
    metrics = out.extra_fields["agent_metrics"]
    assert metrics["num_tool_calls"] == 1 and metrics["failed_tool_calls"] == 0


def test_a_prompt_without_an_image_is_a_clear_error(qwen_dir, qwen_tokenizer):
    config = verl_config(qwen_dir)

    async def go():
        loop = build_loop("gui_grounding", config, ScriptedServer(qwen_tokenizer, []), qwen_tokenizer)
        return await loop.run(dict(SAMPLING), **sample([{"role": "user", "content": "click OK"}]))

    with pytest.raises(ValueError, match="needs an image"):
        asyncio.run(go())


def test_classify_click():
    assert classify_click("[12, 30]", False)[0].point == (12.0, 30.0)
    assert classify_click("<answer>click(5, 6)</answer>", True) == (None, "truncated_by_length")


def test_doctests():
    import doctest

    import agentic_verl.agent_loops.gui as gui

    result = doctest.testmod(gui)
    assert result.attempted > 0 and result.failed == 0
