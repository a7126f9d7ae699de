"""GUI test helpers: dataset layout writers (the stand-in for the released files, which no hub download can reach
here; data/gui_grounding.py documents each layout) and a scripted OpenAI-compatible chat server on loopback.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from json_endpoint import JsonHandler, LoopbackServer

# Model and data text that would run if a page did not escape it.
XSS = "</script><script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=alert(1)>"


def elements(screens):
    """(screen index, element index, element with an instruction unique across screens)."""
    for s, screen in enumerate(screens):
        for e, element in enumerate(screen.elements):
            yield s, e, {**element, "instruction": f"{element['instruction']} on screen {s}"}


def write_seeclick(folder: Path, screens, v2: bool = True) -> Path:
    """ScreenSpot(-v2) JSON: bbox [x, y, w, h] in pixels; mobile = screen 0, desktop = 1, web = 2."""
    images = folder / ("screenspotv2_image" if v2 else "screenspot_imgs")
    images.mkdir(parents=True)
    records: dict[str, list] = {"mobile": [], "desktop": [], "web": []}
    platforms = {"mobile": "android", "desktop": "windows", "web": "shop"}
    for s, _, element in elements(screens):
        group = list(records)[s]
        screens[s].image.save(images / f"{group}_{s}.png")
        x1, y1, x2, y2 = element["bbox"]
        records[group].append({"img_filename": f"{group}_{s}.png", "bbox": [x1, y1, x2 - x1, y2 - y1],
                               "instruction": element["instruction"], "data_type": element["element_type"],
                               "data_source": platforms[group]})
    for group, recs in records.items():
        (folder / f"screenspot_{group}{'_v2' if v2 else ''}.json").write_text(json.dumps(recs))
    return folder


def write_hf_parquet(folder: Path, screens) -> Path:
    """The Hugging Face dump: image bytes inline, bbox (x1, y1, x2, y2) normalised to 0-1."""
    import pandas as pd

    rows = []
    for s, _, element in elements(screens):
        buffer = io.BytesIO()
        screens[s].image.save(buffer, format="PNG")
        w, h = screens[s].image.size
        x1, y1, x2, y2 = element["bbox"]
        rows.append({"file_name": f"shot_{s}.png", "image": {"bytes": buffer.getvalue(), "path": None},
                     "bbox": [x1 / w, y1 / h, x2 / w, y2 / h], "instruction": element["instruction"],
                     "data_type": element["element_type"], "data_source": ["ios", "macos", "gitlab"][s]})
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(folder / "test-00000-of-00001.parquet")
    return folder


def write_screenspot_pro(folder: Path, screens) -> Path:
    """ScreenSpot-Pro: annotations/<app>_<platform>.json, bbox (x1, y1, x2, y2) in pixels, images/<app>_<platform>/."""
    apps = [("vscode", "windows", "Dev"), ("photoshop", "macos", "Creative"), ("excel", "windows", "Office")]
    (folder / "annotations").mkdir(parents=True)
    for s, screen in enumerate(screens):
        app, platform, group = apps[s]
        (folder / "images" / f"{app}_{platform}").mkdir(parents=True)
        screen.image.save(folder / "images" / f"{app}_{platform}" / f"{s}.png")
        recs = [{"img_filename": f"{app}_{platform}/{s}.png", "bbox": list(element["bbox"]),
                 "instruction": element["instruction"], "instruction_cn": "", "id": f"{app}_{s}_{e}",
                 "application": app, "platform": platform, "img_size": list(screen.image.size),
                 "ui_type": element["element_type"], "group": group}
                for s2, e, element in elements(screens) if s2 == s]
        (folder / "annotations" / f"{app}_{platform}.json").write_text(json.dumps(recs))
    return folder


def write_gui_actor(folder: Path, screens) -> Path:
    """GUI-Actor training JSON: several human/gpt turns per screenshot, bbox_gt normalised; one turn has only a
    normalised click (no bbox_gt)."""
    (folder / "images").mkdir(parents=True)
    records = []
    for s, screen in enumerate(screens):
        screen.image.save(folder / "images" / f"shot_{s}.png")
        w, h = screen.image.size
        conversations = []
        for s2, e, element in elements(screens):
            if s2 != s:
                continue
            x1, y1, x2, y2 = element["bbox"]
            cx, cy = (x1 + x2) / 2 / w, (y1 + y2) / 2 / h
            gpt = {"from": "gpt", "value": f"pyautogui.click(x={cx:.4f}, y={cy:.4f})", "recipient": "os"}
            if e != 3:  # the last element of each screen: a click only
                gpt["bbox_gt"] = [x1 / w, y1 / h, x2 / w, y2 / h]
            conversations += [{"from": "human", "value": ("<image>" if e == 0 else "") + element["instruction"]}, gpt]
        records.append({"image": f"shot_{s}.png", "conversations": conversations})
    path = folder / "gui_actor_train.json"
    path.write_text(json.dumps(records))
    return path


class ScriptedChatServer(LoopbackServer):
    """An OpenAI-compatible `/v1/models` + `/v1/chat/completions` on 127.0.0.1 that plays a grounding model: it
    decodes the screenshot from the request's data URL, resizes its size as Qwen2.5-VL's processor would
    (`smart_resize`, 28-pixel factor, the given min/max pixels) and answers `answer(instruction, resized_size,
    original_size)` as the assistant's text. Records every request body."""

    def __init__(self, answer, model_name: str = "scripted-vl", min_pixels: int = 4 * 28 * 28,
                 max_pixels: int = 16384 * 28 * 28):
        self.answer, self.model_name = answer, model_name
        self.min_pixels, self.max_pixels = min_pixels, max_pixels
        self.requests: list[dict] = []
        server = self

        class Handler(JsonHandler):
            served_models = (model_name,)

            def do_GET(self):
                if self.path == "/v1/models":
                    return super().do_GET()
                return self.send_json({"error": "not found"}, 404)

            def do_POST(self):
                body = self.read_json()
                server.requests.append(body)
                if self.path != "/v1/chat/completions" or body.get("model") != server.model_name:
                    return self.send_json({"error": {"message": "bad request"}}, 400)
                content = body["messages"][-1]["content"]
                url = next(c["image_url"]["url"] for c in content if c["type"] == "image_url")
                text = next(c["text"] for c in content if c["type"] == "text")
                instruction = text.rsplit("Instruction: ", 1)[-1]
                from PIL import Image

                from agentic_verl.rewards.gui import smart_resize

                with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
                    size = image.size
                h, w = smart_resize(size[1], size[0], 28, server.min_pixels, server.max_pixels)
                reply = server.answer(instruction, (w, h), size)
                return self.send_json({"choices": [{"message": {"role": "assistant", "content": reply},
                                                        "finish_reason": "stop"}]})

        super().__init__(Handler)


class ScriptedPredictor:
    """A click predictor behind the same interface as the model ones: `clicks[instruction]` -> (x, y) in original
    pixels (None: no click); optionally a heatmap for every prediction."""

    name = "scripted"

    def __init__(self, clicks: dict, heatmap=None):
        self.clicks, self.heatmap = clicks, heatmap

    def predict(self, image, instruction: str):
        from agentic_verl.v2p.predictors import Prediction

        point = self.clicks.get(instruction)
        return Prediction(point, text=f"click {point}", heatmap=self.heatmap, input_size=image.size,
                          failure=None if point is not None else "no_click")


def centre(box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
