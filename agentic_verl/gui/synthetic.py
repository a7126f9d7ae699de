"""Synthetic screenshots with known element boxes (buttons with text, coloured icons), drawn with PIL.

For tests and smoke runs where no real screenshot is available: every element has an instruction, a box in pixels
(x1, y1, x2, y2) and an element type ("text" or "icon"), as ScreenSpot's samples do.

>>> screen = synthetic_screen(seed=0)
>>> screen.image.size, len(screen.elements) >= 2, screen.elements[0]["element_type"] in ("text", "icon")
((336, 224), True, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_WORDS = ("Save", "Open", "Cancel", "Submit", "Search", "Login", "Share", "Delete", "Print", "Help")
_ICONS = {"red circle": (220, 40, 40), "green square": (40, 170, 60), "blue triangle": (40, 80, 220),
          "orange star": (240, 150, 20)}


@dataclass
class SyntheticScreen:
    image: object  # PIL.Image.Image
    elements: list[dict]  # {"instruction", "bbox": (x1, y1, x2, y2), "element_type"}


def synthetic_screen(seed: int = 0, size: tuple[int, int] = (336, 224), buttons: int = 2, icons: int = 2
                     ) -> SyntheticScreen:
    """A light window with a title bar, `buttons` labelled buttons and `icons` shapes at non-overlapping places."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    width, height = size
    image = Image.new("RGB", size, (rng.randint(225, 245),) * 3)
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, width, 20], fill=(60, 70, 90))
    taken: list[tuple[int, int, int, int]] = [(0, 0, width, 22)]
    elements = []

    def place(w: int, h: int) -> tuple[int, int, int, int]:
        for _ in range(200):
            x, y = rng.randint(4, width - w - 4), rng.randint(26, height - h - 4)
            box = (x, y, x + w, y + h)
            if all(box[2] + 6 < o[0] or o[2] + 6 < box[0] or box[3] + 6 < o[1] or o[3] + 6 < box[1] for o in taken):
                taken.append(box)
                return box
        raise ValueError(f"no room for a {w}x{h} element on a {width}x{height} screen")

    for word in rng.sample(_WORDS, buttons):
        box = place(12 + 7 * len(word), 22)
        draw.rectangle(box, fill=(230, 232, 240), outline=(90, 90, 110))
        draw.text((box[0] + 6, box[1] + 5), word, fill=(20, 20, 20))
        elements.append({"instruction": f"Click the {word} button", "bbox": box, "element_type": "text"})
    for name in rng.sample(sorted(_ICONS), icons):
        side = rng.randint(18, 34)
        box = place(side, side)
        colour = _ICONS[name]
        if "circle" in name:
            draw.ellipse(box, fill=colour)
        elif "square" in name:
            draw.rectangle(box, fill=colour)
        elif "triangle" in name:
            draw.polygon([(box[0], box[3]), ((box[0] + box[2]) // 2, box[1]), (box[2], box[3])], fill=colour)
        else:
            cx, cy, r = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2, side / 2
            draw.polygon([(cx, cy - r), (cx + r / 3, cy - r / 3), (cx + r, cy), (cx + r / 3, cy + r / 3),
                          (cx, cy + r), (cx - r / 3, cy + r / 3), (cx - r, cy), (cx - r / 3, cy - r / 3)],
                         fill=colour)
        elements.append({"instruction": f"Click the {name} icon", "bbox": box, "element_type": "icon"})
    return SyntheticScreen(image=image, elements=elements)
