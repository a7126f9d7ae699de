"""GUI grounding data: each layout's loader on files written in that layout (ScreenSpot xywh pixels, the HF dump's
normalised xyxy, ScreenSpot-Pro xyxy pixels, GUI-Actor normalised bbox_gt), all giving the same boxes in original
pixels; layout detection; verl parquet rows with the screenshots embedded; `data gui`."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from gui_helpers import elements, write_gui_actor, write_hf_parquet, write_screenspot_pro, write_seeclick
from PIL import Image

from agentic_verl.data.gui_grounding import detect_layout, load_grounding, to_rows, write_parquet

WRITERS = {"seeclick": write_seeclick, "hf_parquet": write_hf_parquet, "screenspot_pro": write_screenspot_pro,
           "gui_actor": write_gui_actor}


def _expected(screens):
    return {e["instruction"]: (tuple(float(v) for v in e["bbox"]), screens[s].image.size, e["element_type"])
            for s, _, e in elements(screens)}


@pytest.mark.parametrize("layout, benchmark, groups", [
    ("seeclick", "screenspot_v2", {"mobile", "desktop", "web"}),  # screenspot_*_v2.json, bbox [x, y, w, h]
    ("hf_parquet", "screenspot", {"mobile", "desktop", "web"}),  # parquet, bbox normalised x1y1x2y2
    ("screenspot_pro", "screenspot_pro", {"Dev", "Creative", "Office"}),  # annotations/, bbox x1y1x2y2 pixels
    ("gui_actor", "gui_actor", {""}),  # training JSON, bbox_gt normalised
])
def test_every_layout_gives_boxes_in_original_pixels(tmp_path, screens, layout, benchmark, groups):
    path = WRITERS[layout](tmp_path / "data", screens)
    assert detect_layout(path) == layout
    samples = load_grounding(path)
    expected = _expected(screens)
    assert len(samples) == len(expected) == 12
    for sample in samples:
        bbox, size, element_type = expected[sample.instruction]
        assert sample.image_size == size and sample.open_image().size == size
        if layout == "gui_actor" and sample.bbox[0] == sample.bbox[2]:  # a click-only turn: a point at the centre
            assert sample.bbox[:2] == pytest.approx(((bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2), abs=0.05)
            continue
        assert sample.bbox == pytest.approx(bbox, abs=1e-6)
        if layout != "gui_actor":
            assert sample.element_type == element_type
    assert {s.benchmark for s in samples} == {benchmark}
    assert {s.group for s in samples} == groups


def test_seeclick_v1_names_and_limit(tmp_path, screens):
    path = write_seeclick(tmp_path / "ss1", screens, v2=False)
    samples = load_grounding(path, limit=5)
    assert len(samples) == 5 and {s.benchmark for s in samples} == {"screenspot"}
    assert {s.platform for s in load_grounding(path)} == {"android", "windows", "shop"}


def test_loader_errors(tmp_path, screens):
    path = write_screenspot_pro(tmp_path / "pro", screens)
    annotation = next((path / "annotations").glob("*.json"))
    records = json.loads(annotation.read_text())
    records[0]["bbox"] = [5000, 5000, 5100, 5100]
    annotation.write_text(json.dumps(records))
    with pytest.raises(ValueError, match="outside"):
        load_grounding(path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a known GUI grounding layout"):
        load_grounding(tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        load_grounding(tmp_path / "missing")


def test_parquet_rows_embed_the_screenshot_and_the_pointer_target(tmp_path, screens):
    samples = load_grounding(write_screenspot_pro(tmp_path / "pro", screens))
    out = write_parquet(samples, tmp_path / "pro.parquet", split="test")
    frame = pd.read_parquet(out)
    assert len(frame) == 12
    row = frame.iloc[0]
    sample = samples[0]
    with Image.open(io.BytesIO(row["images"][0]["bytes"])) as image:
        assert image.size == sample.image_size
    assert list(row["reward_model"]["ground_truth"]["bbox"]) == list(sample.bbox)
    assert row["agent_name"] == "gui_grounding" and row["data_source"] == "screenspot_pro"
    messages = list(row["messages"])
    assert messages[1]["content"] == "<image>" + sample.instruction
    assert messages[2] == {"role": "assistant", "content": "pyautogui.click(<|pointer_start|><|pointer_pad|>"
                                                           "<|pointer_end|>)"}
    assert row["prompt"][0]["content"].startswith("<image>") and sample.instruction in row["prompt"][0]["content"]
    extra = row["extra_info"]
    assert (extra["index"], extra["split"], extra["group"], extra["element_type"]) == (0, "test", sample.group,
                                                                                      sample.element_type)
    assert list(extra["image_size"]) == list(sample.image_size)
    assert to_rows([], "x") == []


def test_gui_rows_score_through_the_gui_reward(tmp_path, screens):
    """The row's ground truth and extra_info are what `gui_click_in_box` reads: the box centre scores 1."""
    from agentic_verl.rewards.gui import gui_click_in_box

    row = to_rows(load_grounding(write_seeclick(tmp_path / "ss", screens)), "test")[0]
    x1, y1, x2, y2 = row["reward_model"]["ground_truth"]["bbox"]
    answer = f"pyautogui.click(x={(x1 + x2) / 2}, y={(y1 + y2) / 2})"
    assert gui_click_in_box(answer, row["reward_model"]["ground_truth"], row["extra_info"])["score"] == 1.0
    assert gui_click_in_box("pyautogui.click(x=0, y=0)", row["reward_model"]["ground_truth"])["score"] == 0.0


def test_data_gui_command(tmp_path, screens):
    from agentic_verl.cli import main as cli_main

    def main(argv):
        return cli_main(["data", "gui", *argv])

    data = write_gui_actor(tmp_path / "actor", screens)
    images = tmp_path / "actor" / "images"
    assert main(["--data", str(data), "--images", str(images), "--out", str(tmp_path / "train.parquet")]) == 0
    assert len(pd.read_parquet(tmp_path / "train.parquet")) == 12
    assert main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.parquet")]) == 2


def test_verl_datasets_read_the_rows(tmp_path, screens, pointer_dir):
    """verl's own datasets with the real Qwen2.5-VL processor: the SFT dataset trains exactly the pointer action
    (with the image's M-RoPE inputs), the RL dataset turns `<image>` into the screenshot for the gui_grounding loop."""
    from omegaconf import OmegaConf
    from transformers import AutoProcessor
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
    from verl.utils.dataset.rl_dataset import RLHFDataset

    processor = AutoProcessor.from_pretrained(pointer_dir)
    samples = load_grounding(write_screenspot_pro(tmp_path / "pro", screens), limit=2)
    path = str(write_parquet(samples, tmp_path / "pro.parquet"))
    sft = MultiTurnSFTDataset(path, processor.tokenizer, OmegaConf.create(
        {"messages_key": "messages", "image_key": "images", "max_length": 1024, "truncation": "error"}),
        processor=processor)
    item = sft[0]
    trained = processor.tokenizer.decode(item["input_ids"][item["loss_mask"].bool()])
    assert trained.startswith("pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)<|im_end|>")
    grid = item["multi_modal_inputs"]["image_grid_thw"]
    assert grid.tolist() == [[1, 252 // 14, 392 // 14]]  # screen 2, 392x252, unresized
    assert int((item["input_ids"] == 151655).sum()) == 9 * 14  # one <|image_pad|> per merged patch
    rl = RLHFDataset(path, processor.tokenizer, OmegaConf.create(
        {"prompt_key": "prompt", "image_key": "images", "max_prompt_length": 1024, "filter_overlong_prompts": False,
         "return_raw_chat": True}), processor=processor)
    content = rl[0]["raw_prompt"][0]["content"]
    assert content[0]["type"] == "image" and content[0]["image"].size == samples[0].image_size
    assert content[1]["text"].endswith(samples[0].instruction)
