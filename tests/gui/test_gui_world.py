"""The synthetic GUI world (v2p/synthetic.py `GuiWorld`, data/gui_world.py, `agentic-verl data gui-world`): the same
seed draws byte-identical screens and files, held-out layouts are never trained on, boxes lie inside the screenshot
and do not overlap, every instruction names exactly one widget (and the widget drawn there is the one named), size
buckets match the drawn boxes, the baselines are what their definition says; `data gui --target text-click` rows
and the per-size accuracy `eval screenspot` reports."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from agentic_verl.v2p.sizes import SIZE_BUCKETS, size_bucket
from agentic_verl.v2p.synthetic import PALETTE, GuiWorld, SyntheticScreen, WorldConfig, layout

CONFIGS = [WorldConfig(), WorldConfig(widgets=(6, 8), distinct_colours=False, label_colours=False),
           WorldConfig(size=(336, 252), widgets=(2, 3), sizes=("small",))]


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_size_bucket_docstring_examples():
    import doctest

    from agentic_verl.v2p import sizes

    result = doctest.testmod(sizes)
    assert result.attempted > 0 and result.failed == 0


def test_a_seed_draws_the_same_screens_and_another_seed_others():
    first, again, other = GuiWorld(3), GuiWorld(3), GuiWorld(4)
    assert first.labels == again.labels and first.labels != other.labels
    for split in ("train", "test"):
        for index in range(5):
            a, b, c = first.screen(split, index), again.screen(split, index), other.screen(split, index)
            assert a.image.tobytes() == b.image.tobytes() and a.elements == b.elements
            assert a.image.tobytes() != c.image.tobytes()
    assert first.screen("train", 0).image.tobytes() != first.screen("test", 0).image.tobytes()


def test_the_written_world_is_byte_identical_per_seed(tmp_path):
    from agentic_verl.data.gui_world import write_world

    write_world(tmp_path / "a", seed=1, train_screens=6, test_screens=3, dev_screens=2)
    write_world(tmp_path / "b", seed=1, train_screens=6, test_screens=3, dev_screens=2)
    write_world(tmp_path / "c", seed=2, train_screens=6, test_screens=3, dev_screens=2)
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert a == b and len(a) == 6 + 2 + 3 + 4  # images, three record files, world.json
    assert a.keys() == c.keys() and a != c


def test_held_out_layouts_are_disjoint_from_training_ones(monkeypatch):
    world = GuiWorld(0)
    screens = world.split_screens(train=60, test=20, dev=10)
    train, dev, test = ({layout(s) for s in screens[split]} for split in ("train", "dev", "test"))
    assert (len(test), len(dev)) == (20, 10) and not train & test and not train & dev and not dev & test

    # a held-out draw that repeats a training (or, for test, a dev) layout is skipped, not kept
    drawn = world.screen
    repeats = {("test", 0): ("train", 1), ("dev", 1): ("train", 0), ("test", 1): ("dev", 0)}

    def screen(split, index):
        return drawn(*repeats[split, index]) if (split, index) in repeats else drawn(split, index)

    monkeypatch.setattr(world, "screen", screen)
    screens = world.split_screens(train=3, test=2, dev=2)
    assert [layout(s) for s in screens["dev"]] == [layout(drawn("dev", 0)), layout(drawn("dev", 2))]
    assert [layout(s) for s in screens["test"]] == [layout(drawn("test", 2)), layout(drawn("test", 3))]


def _named(screen: SyntheticScreen, element: dict) -> list[dict]:
    """The widgets of `screen` that the element's instruction describes, read back from its words."""
    button = re.fullmatch(r"Click the (\w+) button", element["instruction"])
    icon = re.fullmatch(r"Click the (\w+) (\w+)", element["instruction"])
    assert button or icon, element["instruction"]
    if button:
        return [e for e in screen.elements if e["target"].get("label") == button.group(1)]
    return [e for e in screen.elements if e["target"]["kind"] == "icon"
            and (e["target"]["colour"], e["target"]["shape"]) == icon.groups()]


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "crowded_shared_colours_grey_buttons", "small_only"])
def test_boxes_inside_apart_and_one_widget_per_instruction(config):
    world = GuiWorld(5, config)
    width, height = config.size
    for index in range(40):
        screen = world.screen("train", index)
        assert screen.image.size == config.size
        assert config.widgets[0] <= len(screen.elements) <= config.widgets[1]
        boxes = [e["bbox"] for e in screen.elements]
        for i, (x1, y1, x2, y2) in enumerate(boxes):
            assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height
            for ox1, oy1, ox2, oy2 in boxes[i + 1:]:
                assert x2 < ox1 or ox2 < x1 or y2 < oy1 or oy2 < y1  # no shared pixel
        colours = [e["target"]["colour"] for e in screen.elements if e["target"]["colour"]]
        if config.distinct_colours:
            assert len(colours) == len(set(colours))
        for element in screen.elements:
            assert _named(screen, element) == [element]
            assert element["size"] == size_bucket(element["bbox"], config.size) and element["size"] in config.sizes
            assert element["element_type"] == ("text" if element["target"]["kind"] == "button" else "icon")


def test_the_widget_drawn_in_the_box_is_the_one_named():
    world = GuiWorld(2)
    for index in range(20):
        screen = world.screen("test", index)
        for element in screen.elements:
            x1, y1, x2, y2 = element["bbox"]
            target = element["target"]
            if target["kind"] == "icon":  # every shape covers its box centre
                pixel = screen.image.getpixel(((x1 + x2) // 2, (y1 + y2) // 2))
            else:  # a button's fill, inside its outline (the label may cover the centre)
                pixel = screen.image.getpixel((x1 + 2, y1 + 2))
                assert target["colour"] == world.label_colour[target["label"]]
            assert pixel == PALETTE[target["colour"]], (element["instruction"], pixel)


def test_every_size_bucket_is_drawn():
    screens = GuiWorld(0).split_screens(train=40, test=0)["train"]
    counts = {size: sum(e["size"] == size for s in screens for e in s.elements) for size in SIZE_BUCKETS}
    total = sum(counts.values())
    assert all(count > total / 5 for count in counts.values()), counts


def test_bad_configs_are_refused():
    for bad in [dict(widgets=(0, 2)), dict(widgets=(4, 3)), dict(sizes=("huge",)), dict(labels=11),
                dict(widgets=(3, 12)), dict(button_share=1.5)]:
        with pytest.raises(ValueError):
            WorldConfig(**bad)
    with pytest.raises(ValueError, match="cannot fit"):
        GuiWorld(0, WorldConfig(size=(60, 40), widgets=(6, 6), sizes=("large",))).screen("train", 0)


def test_baselines_follow_their_definition():
    from PIL import Image

    from agentic_verl.data.gui_world import baselines

    image = Image.new("RGB", (100, 100))
    centre_box = {"bbox": (40, 40, 60, 60), "size": "medium"}  # holds the centre (50, 50)
    corner_box = {"bbox": (0, 0, 5, 5), "size": "small"}
    screens = [SyntheticScreen(image, [centre_box, corner_box]),
               SyntheticScreen(image, [corner_box, {"bbox": (70, 70, 99, 99), "size": "large"},
                                       {"bbox": (0, 80, 10, 90), "size": "small"}])]
    out = baselines(screens)
    assert out["centre"] == {"accuracy": 0.2, "n": 5, "by_size": {"small": 0.0, "medium": 1.0, "large": 0.0}}
    assert out["random_widget"]["accuracy"] == pytest.approx(round((2 / 2 + 3 / 3) / 5, 4))
    assert out["random_widget"]["by_size"] == {"small": pytest.approx(round((1 / 2 + 2 / 3) / 3, 4)),
                                               "medium": 0.5, "large": pytest.approx(round(1 / 3, 4))}


def test_gui_world_command_writes_what_data_gui_and_eval_read(tmp_path, capsys):
    from agentic_verl.cli import main
    from agentic_verl.data.gui_grounding import load_grounding

    assert main(["data", "gui-world", "--seed", "0", "--train-screens", "5", "--test-screens", "4",
                 "--dev-screens", "3", "--out", str(tmp_path / "world")]) == 0
    printed = capsys.readouterr().out
    world = json.loads((tmp_path / "world" / "world.json").read_text())
    assert [world["splits"][split]["screens"] for split in ("train", "dev", "test")] == [5, 3, 4]
    for split in ("dev", "test"):
        assert f"baselines on {split}: centre click {world['baselines'][split]['centre']['accuracy']:.3f}" in printed
    test = load_grounding(tmp_path / "world" / "test", benchmark="gui_world")
    assert len(test) == world["splits"]["test"]["samples"] == world["baselines"]["test"]["centre"]["n"]
    drawn = GuiWorld(0).split_screens(5, 4, 3)["test"]
    assert [s.bbox for s in test] == [tuple(float(v) for v in e["bbox"]) for s in drawn for e in s.elements]
    assert {s.element_type for s in test} <= {"text", "icon"} and test[0].image_size == (224, 168)
    with pytest.raises(SystemExit, match="WIDTHxHEIGHT"):
        main(["data", "gui-world", "--size", "224", "--out", str(tmp_path / "bad")])


@pytest.mark.parametrize("max_pixels, scale", [(None, 1.0), (112 * 84, 0.5)])
def test_text_click_rows_answer_at_the_box_centre_in_the_pixels_the_model_sees(tmp_path, max_pixels, scale):
    import pandas as pd

    from agentic_verl.cli import main
    from agentic_verl.data.gui_world import write_world
    from agentic_verl.rewards.gui import gui_click_in_box

    write_world(tmp_path / "world", seed=0, train_screens=3, test_screens=1)
    args = ["data", "gui", "--data", str(tmp_path / "world" / "train"), "--target", "text-click",
            "--out", str(tmp_path / "click.parquet")] + (["--max-pixels", str(max_pixels)] if max_pixels else [])
    assert main(args) == 0
    rows = pd.read_parquet(tmp_path / "click.parquet").to_dict("records")
    for row in rows:
        user, answer = row["messages"]
        assert list(row["prompt"]) == [user] and user["content"].startswith("<image>\n")
        w, h = (round(v * scale) for v in row["extra_info"]["image_size"])
        assert list(row["extra_info"]["input_size"]) == [w, h] and f"is {w}x{h} pixels" in user["content"]
        x1, y1, x2, y2 = row["reward_model"]["ground_truth"]["bbox"]
        assert answer == {"role": "assistant",
                          "content": f"pyautogui.click(x={round((x1 + x2) / 2 * scale)}, "
                                     f"y={round((y1 + y2) / 2 * scale)})"}
        extra = {"image_size": list(row["extra_info"]["image_size"]), "input_size": [w, h]}
        assert gui_click_in_box(answer["content"], [x1, y1, x2, y2], extra)["score"] == 1.0
    pointer = pd.read_parquet(_pointer_rows(tmp_path)).iloc[0]
    assert "<|pointer_pad|>" in pointer["messages"][-1]["content"] and "pixels" not in pointer["prompt"][0]["content"]


def _pointer_rows(tmp_path: Path) -> Path:
    from agentic_verl.cli import main

    out = tmp_path / "pointer.parquet"
    assert main(["data", "gui", "--data", str(tmp_path / "world" / "train"), "--out", str(out)]) == 0
    return out


class _LargeTargetClicker:
    """Clicks the centre of the named widget when it is large, the top-left corner otherwise (the screen is found
    by its pixels: instructions repeat across screens)."""

    name = "large-only"

    def __init__(self, screens):
        self.elements = {(s.image.tobytes(), e["instruction"]): e for s in screens for e in s.elements}

    def predict(self, image, instruction):
        from agentic_verl.v2p.predictors import Prediction

        element = self.elements[(image.tobytes(), instruction)]
        x1, y1, x2, y2 = element["bbox"]
        point = ((x1 + x2) / 2, (y1 + y2) / 2) if element["size"] == "large" else (0.0, 0.0)
        return Prediction(point, input_size=image.size)


def test_eval_reports_accuracy_by_target_size(tmp_path):
    from agentic_verl.data.gui_world import write_world
    from agentic_verl.eval.screenspot import ScreenSpotSettings, evaluate, format_breakdown_table

    write_world(tmp_path / "world", seed=0, train_screens=1, test_screens=6)
    screens = GuiWorld(0).split_screens(1, 6)["test"]
    result = evaluate(ScreenSpotSettings(data=[str(tmp_path / "world" / "test")], benchmark="gui_world"),
                      predictor=_LargeTargetClicker(screens))
    counts = {size: sum(e["size"] == size for s in screens for e in s.elements) for size in SIZE_BUCKETS}
    assert all(counts.values()), counts
    assert result["summary"]["sizes"] == {size: {"accuracy": 1.0 if size == "large" else 0.0, "n": n}
                                          for size, n in counts.items()}
    assert all(r["size"] == size_bucket(r["bbox"], r["image_size"]) for r in result["samples"])
    assert f"| gui_world | 0.0 ({counts['small']}) | 0.0 ({counts['medium']}) | 100.0 ({counts['large']}) |" in \
        format_breakdown_table(result)


def test_eval_table_joins_screenspot_runs_with_the_world_baselines(tmp_path, capsys):
    from agentic_verl.cli import main
    from agentic_verl.data.gui_world import write_world
    from agentic_verl.eval.screenspot import ScreenSpotSettings, evaluate, write_result

    world = write_world(tmp_path / "world", seed=0, train_screens=1, test_screens=6)
    screens = GuiWorld(0).split_screens(1, 6)["test"]
    settings = ScreenSpotSettings(data=[str(tmp_path / "world" / "test")], benchmark="gui_world", label="large only")
    write_result(evaluate(settings, predictor=_LargeTargetClicker(screens)), tmp_path / "run")
    result = str(tmp_path / "run" / "result.json")
    assert main(["eval", "table", result, "--baselines", str(tmp_path / "world" / "world.json")]) == 0
    table = capsys.readouterr().out
    n = world["splits"]["test"]["samples"]
    large = world["splits"]["test"]["by_size"]["large"] / n
    assert f"| large only | {n} | {large:.3f} | 0.000 | 0.000 | 1.000 | 1.00 | 0.00 |" in table
    centre = world["baselines"]["test"]["centre"]
    assert f"| baseline: centre | {n} | {centre['accuracy']:.3f} |" in table and "| baseline: random widget |" in table
    with pytest.raises(SystemExit, match="no baselines for split 'dev'"):
        main(["eval", "table", result, "--baselines", str(tmp_path / "world" / "world.json"), "--baseline-split", "dev"])
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps({"settings": {"model": "m"}, "summary": {}, "questions": []}))
    with pytest.raises(SystemExit, match="mixes"):
        main(["eval", "table", result, str(qa)])


def test_preflight_of_the_text_click_sft(tmp_path, tiny_vl_dir, pointer_dir):
    from agentic_verl.cli import main
    from agentic_verl.data.gui_world import write_world
    from agentic_verl.preflight.gui import check_gui_data, check_vl_model
    from agentic_verl.preflight.settings import Report

    write_world(tmp_path / "world", seed=0, train_screens=2, test_screens=1)
    click = tmp_path / "click.parquet"
    assert main(["data", "gui", "--data", str(tmp_path / "world" / "train"), "--target", "text-click",
                 "--out", str(click)]) == 0
    for path, level, words in [(click, "ok", "rows"), (_pointer_rows(tmp_path), "FAIL", "no text click")]:
        report = Report()
        check_gui_data(report, "train data", str(path), "sft-click")
        [(found_level, _, message)] = report.findings
        assert found_level == level and words in message, report.findings
    for model, level in [(tiny_vl_dir, "ok"), (pointer_dir, "FAIL")]:
        report = Report()
        check_vl_model(report, "model", str(model), "sft-click")
        assert report.findings[0][0] == level, report.findings
