"""`eval screenspot` end to end on synthetic screenshots in the released layouts: a model that clicks every box
centre (accuracy 1.0, through a scripted OpenAI-compatible server on loopback and the real HTTP predictor), one
that clicks outside every box (0.0), one that never answers with a click, and the tiny real V2P pointer model
through the command line (any accuracy; the mechanics are asserted)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from gui_helpers import ScriptedChatServer, ScriptedPredictor, centre, elements, write_screenspot_pro, write_seeclick

from agentic_verl.eval.screenspot import ScreenSpotSettings, evaluate, format_paper_table, write_result
from agentic_verl.eval.screenspot_report import ScreenSpotReport

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def datasets(tmp_path, screens):
    return [write_seeclick(tmp_path / "ScreenSpot-v2", screens), write_screenspot_pro(tmp_path / "ScreenSpot-Pro",
                                                                                       screens)]


def test_perfect_clicks_through_an_endpoint_score_one(datasets, screens, tmp_path):
    boxes = {e["instruction"]: e["bbox"] for _, _, e in elements(screens)}

    def answer(instruction, resized, original):  # Qwen2.5-VL style: pixels of the resized image
        x, y = centre(boxes[instruction])
        return f"pyautogui.click(x={x * resized[0] / original[0]:.2f}, y={y * resized[1] / original[1]:.2f})"

    # a small max_pixels makes the server's resize (and so the coordinate mapping) non-trivial
    with ScriptedChatServer(answer, min_pixels=28 * 28, max_pixels=64 * 28 * 28) as server:
        settings = ScreenSpotSettings(data=datasets, endpoint=server.url, model_name=server.model_name,
                                      max_pixels=64 * 28 * 28, min_pixels=28 * 28, concurrency=4)
        report = ScreenSpotReport()
        result = evaluate(settings, report=report)
    assert result["summary"] == {**result["summary"], "n": 24, "accuracy": 1.0}
    assert result["settings"]["predictor"] == "EndpointPredictor"
    v2, pro = result["benchmarks"]["screenspot_v2"], result["benchmarks"]["screenspot_pro"]
    assert (v2["n"], v2["accuracy"], pro["n"], pro["accuracy"]) == (12, 1.0, 12, 1.0)
    assert v2["groups"]["mobile"] == {"text": 1.0, "icon": 1.0, "avg": 1.0, "n": 4}
    assert set(pro["groups"]) == {"Dev", "Creative", "Office"} and pro["platforms"]["macos"]["n"] == 4
    assert all(r["input_size"][0] * r["input_size"][1] <= 64 * 28 * 28 < r["image_size"][0] * r["image_size"][1]
               for r in result["samples"])  # every screenshot was scaled down: the mapping back is exercised
    assert len(server.requests) == 24 and all(r["model"] == server.model_name for r in server.requests)
    table = format_paper_table(result)
    assert "| V2P-7B (published) | - | 92.3 | 50.5 |" in table
    assert "| GUI-Actor-7B (published) | - | 92.1 | 44.6 |" in table
    assert "| Qwen2.5-VL-7B (published) | - | 88.8 | 26.8 |" in table
    assert "| GUI-G2-7B (published) | - | 93.3 | 47.5 |" in table
    assert "| scripted-vl | - | 100.0 | 100.0 |" in table
    write_result(result, tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["summary"]["accuracy"] == 1.0 and len(saved["samples"]) == 24
    assert "| ScreenSpot-v2 | **all** | 100.0 | 100.0 | 100.0 | 12 | 0 | 0 |" in (tmp_path / "out/table.md").read_text()
    page = report.render(result)
    assert page.count('<figure class="sample hit"') == 24 and 'class="sample miss"' not in page


def test_clicks_outside_every_box_score_zero(datasets, screens):
    clicks = {e["instruction"]: (0.5, 0.5) for _, _, e in elements(screens)}  # the title bar's corner
    result = evaluate(ScreenSpotSettings(data=datasets, model="unused"), predictor=ScriptedPredictor(clicks))
    assert result["summary"]["accuracy"] == 0.0 and result["summary"]["failures"]["outside_box"] == 24
    assert all(not r["hit"] and r["point"] == [0.5, 0.5] for r in result["samples"])


def test_answers_without_a_click_score_zero_as_no_click(datasets):
    with ScriptedChatServer(lambda *_: "I cannot find that element.") as server:
        settings = ScreenSpotSettings(data=datasets[:1], endpoint=server.url, model_name=server.model_name, limit=3)
        result = evaluate(settings)
    assert result["summary"]["n"] == 3 and result["summary"]["accuracy"] == 0.0
    assert result["summary"]["failures"]["no_click"] == 3
    assert result["samples"][0]["text"] == "I cannot find that element."


def test_tiny_pointer_model_through_the_command(pointer_dir, datasets, tmp_path, capsys):
    from agentic_verl.cli import main as cli_main

    def main(argv):
        return cli_main(["eval", "screenspot", *argv])

    out = tmp_path / "out"
    assert main(["--model", str(pointer_dir), "--data", *map(str, datasets), "--limit", "2", "--out", str(out),
                 "--label", "tiny-v2p", "--max-pixels", str(64 * 28 * 28)]) == 0
    printed = capsys.readouterr().out
    assert "| V2P-7B (published) |" in printed and "| tiny-v2p |" in printed
    result = json.loads((out / "result.json").read_text())
    assert result["settings"]["predictor"] == "PointerPredictor" and result["summary"]["n"] == 4
    for record in result["samples"]:  # any accuracy; every click is a point on the screenshot
        assert record["failure"] in (None, "outside_box") and record["hit"] == (record["failure"] is None)
        assert 0 <= record["point"][0] <= record["image_size"][0] and 0 <= record["point"][1] <= record["image_size"][1]
        assert record["input_size"][0] % 28 == 0 and record["input_size"][1] % 28 == 0
        assert record["input_size"][0] * record["input_size"][1] <= 64 * 28 * 28 < record["image_size"][0] * \
            record["image_size"][1]  # the processor scaled the screenshot down; the click was mapped back up
    page = (out / "report.html").read_text()
    assert page.count('<image class="heat" href="data:image/png;base64,') == 4  # the pointer heatmap is drawn
    assert page.count("<figure class=") == 4 and (out / "table.md").is_file()


def test_command_errors(datasets, tmp_path):
    from agentic_verl.cli import main as cli_main

    def main(argv):
        return cli_main(["eval", "screenspot", *argv])

    assert main(["--endpoint", "http://127.0.0.1:9", "--model-name", "x", "--data", str(datasets[0])]) == 2
    assert main(["--model", str(tmp_path / "no_model"), "--data", str(datasets[0])]) == 2
    assert main(["--model", str(tmp_path), "--data", str(tmp_path / "no_data")]) == 2
    with pytest.raises(SystemExit):
        main(["--model", str(tmp_path), "--model-name", "x", "--data", str(datasets[0])])


def test_recipe_passes_flags_the_command_accepts(tmp_path):
    """recipes/v2p/eval_screenspot.sh with a stand-in `agentic-verl` that records its arguments, parsed by the real
    parser."""
    import argparse

    from agentic_verl.commands.eval_screenspot import add_screenspot

    stand_in = tmp_path / "agentic-verl"
    stand_in.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$RECORD_FILE"\n')
    stand_in.chmod(0o755)
    record = tmp_path / "argv.txt"
    env = {**os.environ, "MODEL_PATH": "/models/v2p-7b", "DATA_DIR": "/data",
           "RECORD_FILE": str(record), "AGENTIC_VERL": str(stand_in)}
    env.pop("AGENTIC_VERL_DEVICE", None)
    refused = subprocess.run(["bash", str(REPO / "recipes/v2p/eval_screenspot.sh")], cwd=REPO, capture_output=True,
                             env={k: v for k, v in env.items() if k != "MODEL_PATH"}, text=True, timeout=60)
    assert refused.returncode == 2 and "MODEL_PATH" in refused.stderr
    subprocess.run(["bash", str(REPO / "recipes/v2p/eval_screenspot.sh"), "--limit", "5"], cwd=REPO, env=env,
                   check=True, timeout=60)
    argv = record.read_text().splitlines()
    assert argv[:2] == ["eval", "screenspot"]
    parser = argparse.ArgumentParser()
    add_screenspot(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(argv[1:])
    assert (args.model, args.data, args.limit) == ("/models/v2p-7b", ["/data/ScreenSpot-v2", "/data/ScreenSpot-Pro"],
                                                   5)
    assert args.out == "outputs/eval/screenspot_v2p-7b" and args.label == "v2p-7b"
