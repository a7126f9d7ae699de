"""Synthetic screenshots with known element boxes, drawn with PIL: single test screens and a seeded world of them.

Every element has an instruction, a box in pixels (x1, y1, x2, y2) and an element type ("text" or "icon"), as
ScreenSpot's samples do.

- `synthetic_screen(seed)`: one window with a few labelled buttons and coloured icons (fixtures for tests).
- `GuiWorld(seed, WorldConfig(...))`: a world for training and held-out evaluation (the V2P miniature,
  recipes/v2p/demo.sh). It invents its button labels (syllable words no model has seen) and gives each label its
  own colour; a screen holds a few widgets (buttons, and icons: a colour and a shape) at random places and sizes,
  with non-overlapping boxes inside the image, and one instruction per widget that names exactly that widget
  ("Click the Drovu button", "Click the purple star"). Screens are drawn from one random stream per (seed, split,
  index): the same seed gives byte-identical screenshots, and train, dev and test screens come from different
  streams (`split_screens` also drops any held-out screen whose layout a train screen has). Settings are chosen on
  dev; test is for reporting. Widget sizes are drawn evenly from
  the size buckets of `gui.sizes` (small < 1% of the area, medium < 4%, large). `WorldConfig` makes it harder:
  more widgets, colours shared between widgets, grey buttons that only their text tells apart, larger screens.

>>> screen = synthetic_screen(seed=0)
>>> screen.image.size, len(screen.elements) >= 2, screen.elements[0]["element_type"] in ("text", "icon")
((336, 224), True, True)
>>> world = GuiWorld(seed=0)
>>> shot = world.screen("test", 0)
>>> shot.image.size, 3 <= len(shot.elements) <= 5, shot.elements[0]["instruction"].startswith("Click the ")
((224, 168), True, True)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from agentic_verl.v2p.sizes import SIZE_BUCKETS, size_bucket

_WORDS = ("Save", "Open", "Cancel", "Submit", "Search", "Login", "Share", "Delete", "Print", "Help")
_ICONS = {"red circle": (220, 40, 40), "green square": (40, 170, 60), "blue triangle": (40, 80, 220),
          "orange star": (240, 150, 20)}


@dataclass
class SyntheticScreen:
    image: object  # PIL.Image.Image
    elements: list[dict]  # {"instruction", "bbox": (x1, y1, x2, y2), "element_type"} (+ "size", "target" in a world)


class _Placer:
    """Random non-overlapping boxes (at least `gap` pixels apart) inside a `width` x `height` image, below `top`."""

    def __init__(self, rng: random.Random, width: int, height: int, top: int, gap: int = 6, margin: int = 4):
        self.rng, self.width, self.height, self.gap, self.margin = rng, width, height, gap, margin
        self.top = top
        self.taken: list[tuple[int, int, int, int]] = []

    def fits(self, box) -> bool:
        g = self.gap
        return all(box[2] + g < o[0] or o[2] + g < box[0] or box[3] + g < o[1] or o[3] + g < box[1]
                   for o in self.taken)

    def place(self, w: int, h: int, tries: int = 200) -> tuple[int, int, int, int] | None:
        """A free (x1, y1, x2, y2) box of w x h pixels, or None when none was found in `tries` draws."""
        x_max, y_max = self.width - w - self.margin, self.height - h - self.margin
        if x_max < self.margin or y_max < self.top:
            return None
        for _ in range(tries):
            x, y = self.rng.randint(self.margin, x_max), self.rng.randint(self.top, y_max)
            box = (x, y, x + w, y + h)
            if self.fits(box):
                self.taken.append(box)
                return box
        return None


def _draw_shape(draw, shape: str, box, colour) -> None:
    x1, y1, x2, y2 = box
    cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2
    if shape == "circle":
        draw.ellipse(box, fill=colour)
    elif shape == "square":
        draw.rectangle(box, fill=colour)
    elif shape == "triangle":
        draw.polygon([(x1, y2), (cx, y1), (x2, y2)], fill=colour)
    elif shape == "diamond":
        draw.polygon([(cx, y1), (x2, cy), (cx, y2), (x1, cy)], fill=colour)
    elif shape == "star":
        draw.polygon([(cx, cy - ry), (cx + rx / 3, cy - ry / 3), (cx + rx, cy), (cx + rx / 3, cy + ry / 3),
                      (cx, cy + ry), (cx - rx / 3, cy + ry / 3), (cx - rx, cy), (cx - rx / 3, cy - ry / 3)],
                     fill=colour)
    else:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")


def synthetic_screen(seed: int = 0, size: tuple[int, int] = (336, 224), buttons: int = 2, icons: int = 2
                     ) -> SyntheticScreen:
    """A light window with a title bar, `buttons` labelled buttons and `icons` shapes at non-overlapping places."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    width, height = size
    image = Image.new("RGB", size, (rng.randint(225, 245),) * 3)
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, width, 20], fill=(60, 70, 90))
    placer = _Placer(rng, width, height, top=26)
    placer.taken.append((0, 0, width, 22))  # the title bar
    elements = []

    def place(w: int, h: int) -> tuple[int, int, int, int]:
        box = placer.place(w, h)
        if box is None:
            raise ValueError(f"no room for a {w}x{h} element on a {width}x{height} screen")
        return box

    for word in rng.sample(_WORDS, buttons):
        box = place(12 + 7 * len(word), 22)
        draw.rectangle(box, fill=(230, 232, 240), outline=(90, 90, 110))
        draw.text((box[0] + 6, box[1] + 5), word, fill=(20, 20, 20))
        elements.append({"instruction": f"Click the {word} button", "bbox": box, "element_type": "text"})
    for name in rng.sample(sorted(_ICONS), icons):
        side = rng.randint(18, 34)
        box = place(side, side)
        _draw_shape(draw, name.split()[1], box, _ICONS[name])
        elements.append({"instruction": f"Click the {name} icon", "bbox": box, "element_type": "icon"})
    return SyntheticScreen(image=image, elements=elements)


# ---------------------------------------------------------------- the world

PALETTE = {"red": (215, 40, 40), "green": (40, 160, 60), "blue": (40, 80, 220), "orange": (245, 140, 20),
           "purple": (140, 60, 190), "yellow": (225, 200, 20), "cyan": (20, 185, 200), "pink": (240, 110, 175),
           "brown": (125, 75, 35), "black": (30, 30, 30)}
SHAPES = ("circle", "square", "triangle", "star", "diamond")
BUTTON_GREY = (205, 208, 215)
# area share of the screenshot drawn for each size bucket (inside gui.sizes' bounds, away from them)
_SHARE = {"small": (0.004, 0.009), "medium": (0.012, 0.035), "large": (0.045, 0.09)}
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kr", "tr", "sh")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")


@dataclass(frozen=True)
class WorldConfig:
    size: tuple[int, int] = (224, 168)  # screenshot (width, height); 224x168 is an 8x6 grid of 28x28 patches
    widgets: tuple[int, int] = (3, 5)  # widgets per screen: min, max
    labels: int = 6  # invented button labels in the world
    button_share: float = 0.5  # chance that a widget is a button (else an icon)
    distinct_colours: bool = True  # no two widgets of a screen share a colour (colour alone tells the target)
    label_colours: bool = True  # each label has its own fill colour (False: grey buttons; only the text differs)
    sizes: tuple[str, ...] = SIZE_BUCKETS  # size buckets drawn evenly

    def __post_init__(self):
        low, high = self.widgets
        if not 1 <= low <= high:
            raise ValueError(f"widgets must be (min, max) with 1 <= min <= max, got {self.widgets}")
        unknown = set(self.sizes) - set(SIZE_BUCKETS)
        if not self.sizes or unknown:
            raise ValueError(f"sizes must be among {SIZE_BUCKETS}, got {self.sizes}")
        if not 0.0 <= self.button_share <= 1.0:
            raise ValueError(f"button_share must be in [0, 1], got {self.button_share}")
        if self.label_colours and self.labels > len(PALETTE):
            raise ValueError(f"{self.labels} labels with their own colours, but the palette has {len(PALETTE)}")
        if self.distinct_colours and high > len(PALETTE):
            raise ValueError(f"{high} widgets of distinct colours, but the palette has {len(PALETTE)}")


def invented_words(rng: random.Random, n: int) -> list[str]:
    """`n` distinct capitalised two-syllable words (e.g. "Drovu"): labels no pretrained model has seen."""
    words: list[str] = []
    while len(words) < n:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(2)).capitalize()
        if word not in words:
            words.append(word)
    return words


@dataclass
class GuiWorld:
    seed: int = 0
    config: WorldConfig = field(default_factory=WorldConfig)

    def __post_init__(self):
        rng = random.Random(f"gui-world/{self.seed}")
        self.labels = invented_words(rng, self.config.labels)
        colours = rng.sample(sorted(PALETTE), len(self.labels)) if self.config.label_colours else []
        self.label_colour = dict(zip(self.labels, colours, strict=False))

    def screen(self, split: str, index: int) -> SyntheticScreen:
        """Screen `index` of `split` ("train", "test", ...): the same (seed, split, index) draws the same pixels."""
        from PIL import Image, ImageDraw

        cfg = self.config
        rng = random.Random(f"gui-world/{self.seed}/{split}/{index}")
        width, height = cfg.size
        for _ in range(100):  # a screen whose widgets do not all fit is drawn again from the same stream
            widgets = self._widgets(rng)
            bar = max(10, height // 14)
            placer = _Placer(rng, width, height, top=bar + 4)
            boxes = [placer.place(w, h) for w, h in (self._box_size(rng, widget) for widget in widgets)]
            if all(box is not None for box in boxes):
                break
        else:
            raise ValueError(f"cannot fit {cfg.widgets} widgets of sizes {cfg.sizes} on a {width}x{height} screen")
        shade = rng.randint(228, 248)
        image = Image.new("RGB", cfg.size, (shade, shade, shade))
        draw = ImageDraw.Draw(image)
        draw.rectangle([0, 0, width - 1, bar], fill=(60, 70, 90))
        elements = []
        for widget, box in zip(widgets, boxes, strict=True):
            if widget["kind"] == "button":
                self._draw_button(draw, widget, box)
                instruction, element_type = f"Click the {widget['label']} button", "text"
            else:
                _draw_shape(draw, widget["shape"], box, PALETTE[widget["colour"]])
                instruction, element_type = f"Click the {widget['colour']} {widget['shape']}", "icon"
            elements.append({"instruction": instruction, "bbox": box, "element_type": element_type,
                             "size": size_bucket(box, cfg.size), "target": widget})
        return SyntheticScreen(image=image, elements=elements)

    def _widgets(self, rng: random.Random) -> list[dict]:
        """What each widget is (button label or icon colour + shape) and its size bucket; every widget can be named
        uniquely: labels differ, icons differ in (colour, shape), and with distinct_colours every colour differs."""
        cfg = self.config
        count = rng.randint(*cfg.widgets)
        used_colours: set[str] = set()
        labels = list(self.labels)
        rng.shuffle(labels)
        icons: set[tuple[str, str]] = set()
        widgets = []
        while len(widgets) < count:
            size = rng.choice(cfg.sizes)
            free = [c for c in sorted(PALETTE) if not (cfg.distinct_colours and c in used_colours)]
            button_labels = [label for label in labels
                             if not (cfg.distinct_colours and self.label_colour.get(label) in used_colours)]
            if button_labels and rng.random() < cfg.button_share:
                label = button_labels[0]
                labels.remove(label)
                colour = self.label_colour.get(label)
                widgets.append({"kind": "button", "label": label, "colour": colour, "size": size})
            else:
                colour, shape = rng.choice(free), rng.choice(SHAPES)
                if (colour, shape) in icons:
                    continue
                icons.add((colour, shape))
                widgets.append({"kind": "icon", "colour": colour, "shape": shape, "size": size})
            if colour is not None:
                used_colours.add(colour)
        return widgets

    def _box_size(self, rng: random.Random, widget: dict) -> tuple[int, int]:
        width, height = self.config.size
        side = math.sqrt(rng.uniform(*_SHARE[widget["size"]]) * width * height)
        if widget["kind"] == "icon":
            return max(6, round(side)), max(6, round(side))
        aspect = math.sqrt(rng.uniform(1.6, 2.6))  # buttons are wider than tall
        return max(8, round(side * aspect)), max(6, round(side / aspect))

    def _draw_button(self, draw, widget: dict, box) -> None:
        colour = PALETTE[widget["colour"]] if widget["colour"] else BUTTON_GREY
        draw.rectangle(box, fill=colour, outline=tuple(v // 2 for v in colour))
        text = widget["label"]
        left, top, right, bottom = draw.textbbox((0, 0), text)
        if right - left + 4 <= box[2] - box[0] and bottom - top + 2 <= box[3] - box[1]:  # only where it fits
            ink = (255, 255, 255) if sum(colour) < 450 else (20, 20, 20)
            draw.text(((box[0] + box[2] - (right - left)) / 2 - left, (box[1] + box[3] - (bottom - top)) / 2 - top),
                      text, fill=ink)

    def split_screens(self, train: int, test: int, dev: int = 0) -> dict[str, list[SyntheticScreen]]:
        """`train`, `dev` and `test` screens, each split from its own stream; a dev or test screen whose layout (its
        boxes) a train screen (or, for test, a dev screen) already has is skipped for the next index, so no held-out
        layout was trained on and the test split shares none with the split used for choosing settings."""
        screens = {"train": [self.screen("train", i) for i in range(train)]}
        seen = {layout(screen) for screen in screens["train"]}
        for split, count in (("dev", dev), ("test", test)):
            screens[split] = []
            index = 0
            while len(screens[split]) < count:
                screen = self.screen(split, index)
                index += 1
                if layout(screen) not in seen:
                    screens[split].append(screen)
            seen |= {layout(screen) for screen in screens[split]}
        return screens


def layout(screen: SyntheticScreen) -> tuple:
    """The screen's layout: its boxes, sorted."""
    return tuple(sorted(tuple(element["bbox"]) for element in screen.elements))
