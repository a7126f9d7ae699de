"""The synthetic GUI world on disk: train and held-out test screens in ScreenSpot's released (SeeClick) layout, so
that `agentic-verl data gui` and `agentic-verl eval screenspot` read them as they read ScreenSpot-v2, plus the
world's description and the trivial baselines a grounding model must beat.

    agentic-verl data gui-world --seed 0 --train-screens 400 --dev-screens 30 --test-screens 30 --out outputs/v2p_demo/world

writes OUT/train/, OUT/dev/ and OUT/test/ (`screenspot_desktop.json` + `images/`, bbox [x, y, w, h] in pixels, one record per
widget, data_type text (buttons) or icon, data_source `gui_world`) and OUT/world.json: the seed, the generator's
settings, the invented labels and their colours, sample counts per split and size bucket, and on the dev and test
splits the accuracy of two baselines that look at no instruction:

- `centre`: always click the screenshot's centre;
- `random_widget`: click the centre of one of the screen's widgets, drawn uniformly: expected accuracy = mean over
  samples of 1 / (widgets on that screen); the honest floor for a model that finds widgets but not the target.

Screens come from `agentic_verl.v2p.synthetic.GuiWorld` (byte-identical per seed; held-out layouts disjoint from
train's). Choose settings on dev; report test.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from agentic_verl.v2p.sizes import SIZE_BUCKETS
from agentic_verl.v2p.synthetic import GuiWorld, SyntheticScreen, WorldConfig

BENCHMARK = "gui_world"
GROUP = "desktop"  # the SeeClick file name's group: screenspot_desktop.json
SPLITS = ("train", "dev", "test")


def write_seeclick_split(screens: list[SyntheticScreen], folder: Path, split: str) -> int:
    """`folder`/screenspot_desktop.json + images/<split>_<i>.png; returns the number of records."""
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    records = []
    for i, screen in enumerate(screens):
        name = f"{split}_{i:04d}.png"
        screen.image.save(images / name, format="PNG")
        for element in screen.elements:
            x1, y1, x2, y2 = element["bbox"]
            records.append({"img_filename": name, "bbox": [x1, y1, x2 - x1, y2 - y1],
                            "instruction": element["instruction"], "data_type": element["element_type"],
                            "data_source": BENCHMARK})
    (folder / f"screenspot_{GROUP}.json").write_text(json.dumps(records, indent=0))
    return len(records)


def baselines(screens: list[SyntheticScreen]) -> dict:
    """Accuracy of clicking the centre and of a uniformly random widget, overall and by size bucket."""
    by_size: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"centre": [], "random_widget": []})
    for screen in screens:
        width, height = screen.image.size
        for element in screen.elements:
            x1, y1, x2, y2 = element["bbox"]
            hits = by_size[element["size"]]
            hits["centre"].append(float(x1 <= width / 2 <= x2 and y1 <= height / 2 <= y2))
            hits["random_widget"].append(1.0 / len(screen.elements))
    out = {}
    for name in ("centre", "random_widget"):
        every = [v for bucket in by_size.values() for v in bucket[name]]
        out[name] = {"accuracy": round(sum(every) / len(every), 4), "n": len(every),
                     "by_size": {size: round(sum(by_size[size][name]) / len(by_size[size][name]), 4)
                                 for size in SIZE_BUCKETS if by_size[size][name]}}
    return out


def write_world(out: str | Path, seed: int, train_screens: int, test_screens: int, dev_screens: int = 0,
                config: WorldConfig | None = None) -> dict:
    """Write the world's train, dev (when `dev_screens`) and test folders and world.json; returns its content."""
    world = GuiWorld(seed, config or WorldConfig())
    screens = world.split_screens(train_screens, test_screens, dev_screens)
    out = Path(out)
    counts = {}
    for split in (s for s in SPLITS if screens[s]):
        samples = write_seeclick_split(screens[split], out / split, split)
        sizes = {size: sum(e["size"] == size for s in screens[split] for e in s.elements) for size in SIZE_BUCKETS}
        counts[split] = {"screens": len(screens[split]), "samples": samples, "by_size": sizes}
    description = {"seed": seed, "config": asdict(world.config), "labels": world.label_colour or world.labels,
                   "splits": counts,
                   "baselines": {split: baselines(screens[split]) for split in ("dev", "test") if screens[split]}}
    (out / "world.json").write_text(json.dumps(description, indent=1))
    return description
