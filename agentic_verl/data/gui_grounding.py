"""GUI grounding data: ScreenSpot, ScreenSpot-v2, ScreenSpot-Pro and GUI-Actor-style training data from local
folders -> `GroundingSample`s -> verl parquet rows (images embedded).

Every loader turns its set's box convention into one: `bbox` = (x1, y1, x2, y2) in pixels of the original
screenshot. The conventions, by layout (`LAYOUTS`; `detect_layout` picks one from the files present):

- `seeclick`: ScreenSpot as released with SeeClick and ScreenSpot-v2 as released by OS-Copilot:
  `screenspot_{mobile,desktop,web}[_v2].json` next to an image folder (`screenspot_imgs/`, `screenspotv2_image/`,
  `images/` or the same folder). Records `{img_filename, bbox, instruction, data_type, data_source}`;
  **bbox = [x, y, width, height] in pixels**. group = the file's mobile/desktop/web; platform = data_source
  (ios, android, windows, macos, tool, shop, gitlab, forum); element type = data_type (text/icon).
- `hf_parquet`: the Hugging Face dumps (rootsautomation/ScreenSpot, HongxinLi/ScreenSpot_v2): `*.parquet` with
  `image` ({bytes}), `bbox`, `instruction`, `data_type`, `data_source`; **bbox = [x1, y1, x2, y2], normalised to 0-1
  when all four values are <= 1, else pixels** (both occur; a pixel box inside the top-left 1x1 pixel cannot). The
  benchmark name is `screenspot_v2` when the folder name says v2, else `screenspot` (override with `benchmark=`).
- `screenspot_pro`: `annotations/*.json` + `images/`: records `{img_filename, bbox, instruction, id, application,
  platform, img_size, ui_type, group}`; **bbox = [x1, y1, x2, y2] in pixels**; group = Dev/Creative/CAD/
  Scientific/Office/OS.
- `gui_actor`: GUI-Actor-style training JSON: `[{"image": path | [path], "conversations": [{"from": "human",
  "value": "<image>instruction"}, {"from": "gpt", "value": "pyautogui.click(x=0.41, y=0.17)", "bbox_gt":
  [x1, y1, x2, y2]}, ...]}]`; **bbox_gt = [x1, y1, x2, y2] normalised to 0-1**; a turn without bbox_gt gives a
  zero-size box at its normalised click (the V2P label is then one-hot). One sample per gpt turn with a click.

The hub is not reachable from here: these read folders you downloaded; tests write the same layouts.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

IMAGE_DIRS = ("screenspot_imgs", "screenspotv2_image", "images", ".")
SEECLICK_FILE = re.compile(r"screenspot_(mobile|desktop|web)(_v2)?\.json$")
_CLICK_XY = re.compile(r"click\(\s*(?:x\s*=\s*)?([-+]?[\d.]+)\s*,\s*(?:y\s*=\s*)?([-+]?[\d.]+)")


@dataclass
class GroundingSample:
    id: str
    instruction: str
    bbox: tuple[float, float, float, float]  # x1, y1, x2, y2 in original-screenshot pixels
    image_size: tuple[int, int]  # (width, height)
    image_path: str | None = None
    image_bytes: bytes | None = field(default=None, repr=False)
    benchmark: str = ""  # screenspot | screenspot_v2 | screenspot_pro | gui_actor | ...
    group: str = ""  # ScreenSpot: mobile/desktop/web; Pro: Dev/Creative/CAD/Scientific/Office/OS
    platform: str = ""  # ios, android, windows, macos, linux, tool, shop, gitlab, forum, ...
    element_type: str = ""  # text | icon
    application: str = ""

    def open_image(self):
        from PIL import Image

        source = io.BytesIO(self.image_bytes) if self.image_bytes is not None else self.image_path
        if source is None:
            raise ValueError(f"sample {self.id} has no image")
        with Image.open(source) as image:
            return image.convert("RGB")

    def image_data(self) -> bytes:
        return self.image_bytes if self.image_bytes is not None else Path(self.image_path).read_bytes()

    def record(self) -> dict:
        """JSON-friendly fields (no image bytes)."""
        out = asdict(self)
        out.pop("image_bytes")
        out["bbox"], out["image_size"] = list(self.bbox), list(self.image_size)
        return out


def xywh_to_xyxy(box) -> tuple[float, float, float, float]:
    """[x, y, w, h] -> (x1, y1, x2, y2).

    >>> xywh_to_xyxy([10, 20, 30, 40])
    (10.0, 20.0, 40.0, 60.0)
    """
    x, y, w, h = (float(v) for v in box)
    return x, y, x + w, y + h


def to_pixels(box, size) -> tuple[float, float, float, float]:
    """An (x1, y1, x2, y2) box normalised to 0-1 -> pixels of an image of `size` (w, h).

    >>> to_pixels([0.1, 0.5, 0.2, 1.0], (200, 100))
    (20.0, 50.0, 40.0, 100.0)
    """
    x1, y1, x2, y2 = (float(v) for v in box)
    return x1 * size[0], y1 * size[1], x2 * size[0], y2 * size[1]


def _image_size(path_or_bytes) -> tuple[int, int]:
    from PIL import Image

    source = io.BytesIO(path_or_bytes) if isinstance(path_or_bytes, bytes) else path_or_bytes
    with Image.open(source) as image:  # reads the header only
        return image.size


def _image_dir(folder: Path) -> Path:
    for name in IMAGE_DIRS:
        if (folder / name).is_dir() and (name == "." or any((folder / name).iterdir())):
            return folder / name
    return folder


def _checked_box(box, size, where: str) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = box
    if not (x2 >= x1 and y2 >= y1):
        raise ValueError(f"{where}: box {list(box)} has negative size")
    if x2 < 0 or y2 < 0 or x1 > size[0] or y1 > size[1]:
        raise ValueError(f"{where}: box {list(box)} lies outside the {size[0]}x{size[1]} screenshot")
    return float(x1), float(y1), float(x2), float(y2)


# ---------------------------------------------------------------- the layouts


def load_seeclick(folder: Path, benchmark: str | None = None) -> list[GroundingSample]:
    """ScreenSpot (SeeClick) / ScreenSpot-v2 (OS-Copilot) JSON files; bbox [x, y, w, h] in pixels."""
    images = _image_dir(folder)
    samples = []
    for path in sorted(p for p in folder.glob("*.json") if SEECLICK_FILE.search(p.name)):
        group, v2 = SEECLICK_FILE.search(path.name).groups()
        name = benchmark or ("screenspot_v2" if v2 else "screenspot")
        for i, rec in enumerate(json.loads(path.read_text())):
            image_path = images / rec["img_filename"]
            size = _image_size(image_path)
            where = f"{path.name}[{i}]"
            samples.append(GroundingSample(
                id=f"{path.stem}/{i}", instruction=str(rec["instruction"]).strip(),
                bbox=_checked_box(xywh_to_xyxy(rec["bbox"]), size, where), image_size=size,
                image_path=str(image_path), benchmark=name, group=group, platform=str(rec.get("data_source", "")),
                element_type=str(rec.get("data_type", ""))))
    return samples


def load_hf_parquet(folder: Path, benchmark: str | None = None) -> list[GroundingSample]:
    """Hugging Face ScreenSpot / ScreenSpot-v2 parquet dumps; bbox (x1, y1, x2, y2), normalised or pixels."""
    import pandas as pd

    name = benchmark or ("screenspot_v2" if "v2" in folder.name.lower() else "screenspot")
    groups = {"ios": "mobile", "android": "mobile", "windows": "desktop", "macos": "desktop"}
    samples = []
    for path in sorted(folder.glob("*.parquet")):
        frame = pd.read_parquet(path)
        for i, rec in enumerate(frame.to_dict("records")):
            image = rec["image"]
            data = image["bytes"] if isinstance(image, dict) else image
            size = _image_size(data)
            box = [float(v) for v in rec["bbox"]]
            if all(0.0 <= v <= 1.0 for v in box):
                box = to_pixels(box, size)
            platform = str(rec.get("data_source", ""))
            samples.append(GroundingSample(
                id=str(rec.get("file_name") or f"{path.stem}/{i}") + f"#{i}", instruction=str(rec["instruction"]).strip(),
                bbox=_checked_box(box, size, f"{path.name}[{i}]"), image_size=size, image_bytes=data, benchmark=name,
                group=groups.get(platform, "web"), platform=platform, element_type=str(rec.get("data_type", ""))))
    return samples


def load_screenspot_pro(folder: Path, benchmark: str | None = None) -> list[GroundingSample]:
    """ScreenSpot-Pro: annotations/*.json + images/; bbox (x1, y1, x2, y2) in pixels."""
    images = folder / "images"
    samples = []
    for path in sorted((folder / "annotations").glob("*.json")):
        for i, rec in enumerate(json.loads(path.read_text())):
            image_path = images / rec["img_filename"]
            size = tuple(int(v) for v in rec["img_size"]) if rec.get("img_size") else _image_size(image_path)
            samples.append(GroundingSample(
                id=str(rec.get("id") or f"{path.stem}/{i}"), instruction=str(rec["instruction"]).strip(),
                bbox=_checked_box([float(v) for v in rec["bbox"]], size, f"{path.name}[{i}]"), image_size=size,
                image_path=str(image_path), benchmark=benchmark or "screenspot_pro", group=str(rec.get("group", "")),
                platform=str(rec.get("platform", "")), element_type=str(rec.get("ui_type", "")),
                application=str(rec.get("application", ""))))
    return samples


def load_gui_actor(path: Path, benchmark: str | None = None, image_folder: str | Path | None = None
                   ) -> list[GroundingSample]:
    """GUI-Actor-style training JSON (a file, or a folder of them); bbox_gt normalised (x1, y1, x2, y2)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    root = Path(image_folder) if image_folder else (path if path.is_dir() else path.parent)
    samples = []
    for file in files:
        for i, rec in enumerate(json.loads(file.read_text())):
            image = rec.get("image")
            image = image[0] if isinstance(image, list) and len(image) == 1 else image
            if not isinstance(image, str):
                continue  # no image or several: not single-screenshot grounding
            image_path = root / image if (root / image).is_file() else _image_dir(root) / image
            size = _image_size(image_path)
            instruction = None
            for j, turn in enumerate(rec.get("conversations", [])):
                if turn.get("from") == "human":
                    instruction = str(turn.get("value", "")).replace("<image>", "").strip()
                    continue
                box = _gui_actor_box(turn)
                if turn.get("from") != "gpt" or box is None or not instruction:
                    continue
                samples.append(GroundingSample(
                    id=f"{file.stem}/{i}/{j}", instruction=instruction,
                    bbox=_checked_box(to_pixels(box, size), size, f"{file.name}[{i}]"), image_size=size,
                    image_path=str(image_path), benchmark=benchmark or "gui_actor",
                    element_type=str(rec.get("data_type", ""))))
    return samples


def _gui_actor_box(turn: dict):
    if turn.get("bbox_gt") is not None:
        return [float(v) for v in turn["bbox_gt"]]
    match = _CLICK_XY.search(str(turn.get("value", "")))
    if match is None:
        return None
    x, y = float(match.group(1)), float(match.group(2))
    return [x, y, x, y] if 0 <= x <= 1 and 0 <= y <= 1 else None


def _is_seeclick(path: Path) -> bool:
    return path.is_dir() and any(SEECLICK_FILE.search(p.name) for p in path.glob("*.json"))


LAYOUTS: dict[str, tuple[Callable[[Path], bool], Callable[..., list[GroundingSample]]]] = {
    "seeclick": (_is_seeclick, load_seeclick),
    "screenspot_pro": (lambda p: p.is_dir() and (p / "annotations").is_dir(), load_screenspot_pro),
    "hf_parquet": (lambda p: p.is_dir() and any(p.glob("*.parquet")), load_hf_parquet),
    "gui_actor": (lambda p: p.suffix == ".json" and p.is_file(), load_gui_actor),
}


def detect_layout(path: str | Path) -> str:
    path = Path(path)
    for name, (matches, _) in LAYOUTS.items():
        if matches(path):
            return name
    raise ValueError(f"{path}: not a known GUI grounding layout ({', '.join(LAYOUTS)}); see "
                     "agentic_verl/data/gui_grounding.py for what each looks like")


def load_grounding(path: str | Path, layout: str = "auto", limit: int | None = None,
                   benchmark: str | None = None) -> list[GroundingSample]:
    """The samples of one local dataset folder (or GUI-Actor JSON file); `limit`: the first N."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    layout = detect_layout(path) if layout == "auto" else layout
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    samples = LAYOUTS[layout][1](path, benchmark=benchmark)
    if not samples:
        raise ValueError(f"{path}: no samples found in the {layout} layout")
    return samples[:limit] if limit else samples


# ---------------------------------------------------------------- verl parquet

AGENT_NAME = "gui_grounding"
ABILITY = "gui_grounding"


TARGETS = ("pointer", "text-click")


def to_rows(samples: Iterable[GroundingSample], split: str, target: str = "pointer",
            min_pixels: int | None = None, max_pixels: int | None = None) -> list[dict]:
    """verl rows, one per sample, the screenshot embedded as PNG/JPEG bytes in `images`:

        data_source   the benchmark name (screenspot_v2, gui_actor, ...)
        prompt        the `gui_grounding` agent loop's user turn (`<image>` + pixel-click instructions; RL)
        messages      the SFT sample (verl's SFT datasets), by `target`:
                      pointer: V2P's: system, user `<image>` + instruction, assistant POINTER_ACTION;
                      text-click: the `prompt` turn, assistant `pyautogui.click(x=.., y=..)` at the box centre in
                      pixels of the image the model sees (the SFT cold start of a text-click model for GRPO)
        images        [{"bytes": ...}]
        reward_model  {"style": "rule", "ground_truth": {"bbox": [x1, y1, x2, y2]}}  (original pixels)
        extra_info    {index, split, id, instruction, image_size, bbox, group, platform, element_type, benchmark}
                      (+ input_size with text-click)

    With `target="text-click"` the prompt states the size of the image the model sees (the screenshot after
    Qwen2.5-VL's smart_resize within `min_pixels`/`max_pixels`, default Qwen2.5-VL-7B's processor bounds, which
    must be the processor's), as `eval screenspot` states it to a text-click model, so SFT, GRPO and evaluation
    show the model one prompt.
    """
    from agentic_verl.agent_loops.prompts import gui_grounding_messages
    from agentic_verl.rewards.gui import QWEN25VL_MAX_PIXELS, QWEN25VL_MIN_PIXELS, smart_resize
    from agentic_verl.v2p.actions import POINTER_ACTION, grounding_messages

    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    rows = []
    for index, sample in enumerate(samples):
        extra = {"index": index, "split": split, **{k: v for k, v in sample.record().items() if k != "image_path"}}
        if target == "pointer":
            prompt = gui_grounding_messages(sample.instruction)
            messages = grounding_messages(sample.instruction, image="<image>", answer=POINTER_ACTION)
        else:
            width, height = sample.image_size
            in_h, in_w = smart_resize(height, width, 28, min_pixels or QWEN25VL_MIN_PIXELS,
                                      max_pixels or QWEN25VL_MAX_PIXELS)
            x1, y1, x2, y2 = sample.bbox
            x, y = round((x1 + x2) / 2 * in_w / width), round((y1 + y2) / 2 * in_h / height)
            prompt = gui_grounding_messages(sample.instruction, in_w, in_h)
            messages = [*prompt, {"role": "assistant", "content": f"pyautogui.click(x={x}, y={y})"}]
            extra["input_size"] = [in_w, in_h]
        rows.append({
            "data_source": sample.benchmark,
            "prompt": prompt,
            "messages": messages,
            "images": [{"bytes": sample.image_data()}],
            "ability": ABILITY,
            "reward_model": {"style": "rule", "ground_truth": {"bbox": list(sample.bbox)}},
            "extra_info": extra,
            "agent_name": AGENT_NAME,
        })
    return rows


def write_parquet(samples: Iterable[GroundingSample], out: str | Path, split: str = "train", target: str = "pointer",
                  min_pixels: int | None = None, max_pixels: int | None = None) -> Path:
    import pandas as pd

    rows = to_rows(samples, split, target, min_pixels, max_pixels)
    if not rows:
        raise ValueError("no samples to write")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(out)
    return out
