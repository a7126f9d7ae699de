"""The V2P action vocabulary: three pointer tokens, the target action, the grounding prompt (no torch import).

V2P (docs/methods.md, "V2P") trains Qwen2.5-VL to answer a grounding instruction with

    pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)

where the hidden state at `<|pointer_pad|>` queries the image patches (`agentic_verl.v2p.model`). The same strings
are used by the data converters (the SFT target), the training batch builder and inference.

>>> POINTER_ACTION
'pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)'
>>> [m["role"] for m in grounding_messages("Open settings", image="<image>")]
['system', 'user']
"""

from __future__ import annotations

from typing import Any

POINTER_START = "<|pointer_start|>"
POINTER_PAD = "<|pointer_pad|>"
POINTER_END = "<|pointer_end|>"
POINTER_TOKENS = (POINTER_START, POINTER_PAD, POINTER_END)
POINTER_ACTION = f"pyautogui.click({POINTER_START}{POINTER_PAD}{POINTER_END})"

# Our wording of the grounding system prompt V2P / GUI-Actor describe (a click action with special tokens).
SYSTEM_PROMPT = (
    "You are a GUI agent. Given a screenshot of the current screen and an instruction, locate the screen element "
    "the instruction refers to and output one PyAutoGUI action that clicks it. The click position is given by "
    "special tokens that point at a patch of the screenshot, for example: pyautogui.click(<your_special_token>)."
)


def grounding_messages(instruction: str, image: Any = None, answer: str | None = None) -> list[dict]:
    """Chat messages for one grounding sample.

    `image`: the string "<image>" gives verl's placeholder form (content strings, for parquet rows); any other value
    (a PIL image, a path) gives content lists for a processor's chat template; None leaves the image out.
    `answer`: an assistant turn to append (the SFT target, e.g. POINTER_ACTION).
    """
    instruction = str(instruction).strip()
    if image is None or isinstance(image, str) and image == "<image>":
        user: Any = ("<image>" if image is not None else "") + instruction
        system: Any = SYSTEM_PROMPT
    else:
        user = [{"type": "image", "image": image}, {"type": "text", "text": instruction}]
        system = [{"type": "text", "text": SYSTEM_PROMPT}]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    if answer is not None:
        messages.append({"role": "assistant", "content": answer if isinstance(user, str)
                         else [{"type": "text", "text": answer}]})
    return messages
