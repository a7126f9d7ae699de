"""Stand-ins for what a GUI-grounding run needs from a vision-language model (no VL model or torchvision offline),
shared by test_gui.py and test_fuzz_gui.py: the Qwen2.5-VL *processor* (chat template + expanding each
<|image_pad|> to (h/28)*(w/28) tokens of the smart-resized image, as the real one does; no pixel values) and the
dataset's qwen_vl_utils image extraction (resizes with smart_resize, as qwen_vl_utils does)."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from PIL import Image
from transformers import BatchFeature
from verl.utils.dataset.rl_dataset import RLHFDataset

from agentic_verl.agent_loops.prompts import gui_grounding_prompt
from agentic_verl.rewards.gui import smart_resize

SAMPLING = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
MIN_PIXELS, MAX_PIXELS = 4 * 28 * 28, 1280 * 28 * 28
VL_UTILS_MAX_PIXELS = 16384 * 28 * 28  # qwen_vl_utils' own bound when it resizes
SCREEN = (1920, 1080)  # width, height of the original screenshot: above the processor's MAX_PIXELS
BOX = [900, 500, 1000, 580]  # ground-truth element, original pixels
TARGET = (960, 540)  # a point inside BOX


class QwenVLProcessorStandIn:
    """The boundary: Qwen2.5-VL's processor (see the module docstring)."""

    def __init__(self, tokenizer, size_dict: bool = False, max_pixels: int = MAX_PIXELS):
        self.tokenizer = tokenizer
        self.max_pixels = max_pixels
        if size_dict:  # newer transformers keep the bounds as size={"shortest_edge": min, "longest_edge": max}
            self.image_processor = SimpleNamespace(patch_size=14, merge_size=2,
                                                   size={"shortest_edge": MIN_PIXELS, "longest_edge": max_pixels})
        else:
            self.image_processor = SimpleNamespace(patch_size=14, merge_size=2, min_pixels=MIN_PIXELS,
                                                   max_pixels=max_pixels)
        self.image_token = "<|image_pad|>"
        self.chat_template = tokenizer.chat_template
        self.calls = []

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, tools=None, **kwargs):
        def flat(content):
            if not isinstance(content, list):
                return content
            return "".join("<|vision_start|><|image_pad|><|vision_end|>" if item["type"] == "image"
                           else item.get("text", "") for item in content)

        return self.tokenizer.apply_chat_template([{**m, "content": flat(m["content"])} for m in messages],
                                                  tokenize=tokenize, add_generation_prompt=add_generation_prompt,
                                                  tools=tools)

    def __call__(self, text, images=None, videos=None, return_tensors="pt", size=None, **kwargs):
        self.calls.append(images)
        [text] = text
        grids = []
        low, high = (size["shortest_edge"], size["longest_edge"]) if size else (MIN_PIXELS, self.max_pixels)
        for image in images or []:  # a call's size= wins over the processor's own bounds, as in transformers 5
            h, w = smart_resize(image.height, image.width, 28, low, high)
            text = text.replace("<|image_pad|>", "\0" * (h * w // (28 * 28)), 1)
            grids.append([1, h // 14, w // 14])
        ids = self.tokenizer(text.replace("\0", "<|image_pad|>"), add_special_tokens=False)["input_ids"]
        return BatchFeature({"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids)),
                             "image_grid_thw": torch.tensor(grids)})


class DatasetStandIn(RLHFDataset):
    """RLHFDataset with qwen_vl_utils' image extraction replaced (it needs torchvision): images are resized with
    smart_resize(factor = 2 x patch size), as qwen_vl_utils.fetch_image does."""

    @classmethod
    def _process_multi_modal_info(cls, messages, image_patch_size, config):
        images = []
        for message in messages:
            for item in message["content"] if isinstance(message["content"], list) else []:
                if item.get("type") == "image":
                    image = item["image"]
                    h, w = smart_resize(image.height, image.width, image_patch_size * 2, MIN_PIXELS,
                                        VL_UTILS_MAX_PIXELS)
                    images.append(image.resize((w, h)))
        return images or None, None, None


def screenshot_messages(instruction="Click the OK button", screen=SCREEN):
    """What RLHFDataset._build_messages makes of prompts.gui_grounding_prompt + the images column (a `screen`
    sized grey screenshot)."""
    text = gui_grounding_prompt(instruction)
    assert text.startswith("<image>")
    screenshot = Image.new("RGB", screen, (200, 200, 200))
    return [{"role": "user", "content": [{"type": "image", "image": screenshot},
                                         {"type": "text", "text": text[len("<image>"):]}]}]
