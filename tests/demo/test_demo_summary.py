"""`agentic-verl demo summary` / `demo seeds`: the run's table, the seeds table (every column, the gain arithmetic)
and the errors for bad input."""

from __future__ import annotations

import json
import re
import statistics

import pytest
from demo_helpers import grpo_lines, qa_question, synthetic_summary, write_log, write_qa

from agentic_verl.cli import main
from agentic_verl.demo.seeds import format_seeds_markdown, gains, load_summaries, seeds_table
from agentic_verl.demo.summary import build_summary, load_summary, parse_spec

# Three seeds, scores in 24ths (24 held-out questions), each field different per seed and per stage.
SEEDS = {
    0: dict(scores=[0 / 24, 9 / 24, 11 / 24], kinds={"1-hop": [0.0, 0.5, 0.75], "2-hop": [0.0, 0.25, 0.1667]},
            tools=[2.0, 1.5, 1.25], truncation=[0.5, 0.0, 1 / 24], seconds=[81.0, 300.0, 90.0], training_seconds=480.0),
    1: dict(scores=[1 / 24, 8 / 24, 12 / 24], kinds={"1-hop": [0.0833, 0.5, 0.8333], "2-hop": [0.0, 0.1667, 0.1667]},
            tools=[1.75, 1.25, 1.5], truncation=[0.25, 0.0, 0.0], seconds=[79.0, 310.0, 88.0], training_seconds=500.0),
    2: dict(scores=[0 / 24, 10 / 24, 10 / 24], kinds={"1-hop": [0.0, 0.6667, 0.75], "2-hop": [0.0, 0.1667, 0.0833]},
            tools=[2.0, 1.0, 1.0], truncation=[0.375, 1 / 24, 0.0], seconds=[85.0, 290.0, 95.0], training_seconds=470.0),
}


@pytest.fixture
def seeds_dir(tmp_path):
    for seed, fields in SEEDS.items():
        path = tmp_path / "seeds" / f"seed{seed}" / "summary.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(synthetic_summary(seed, **fields)))
    return tmp_path / "seeds"


def test_seeds_table_has_every_column_in_the_issues_order(seeds_dir):
    header, rows = seeds_table(load_summaries([str(seeds_dir)]))
    assert header == ["seed", "n", "before SFT", "after SFT", "after GRPO", "1-hop", "2-hop", "searches/q", "truncated",
                      "seconds (before SFT / after SFT / after GRPO / GRPO)", "total s"]
    across = (lambda values, digits=3: " → ".join(f"{v:.{digits}f}" for v in values))  # noqa: E731
    for row, (seed, f) in zip(rows, SEEDS.items(), strict=False):
        expected = [str(seed), "24", *(f"{s:.3f}" for s in f["scores"]), across(f["kinds"]["1-hop"]),
                    across(f["kinds"]["2-hop"]), across(f["tools"], 2), across(f["truncation"], 2),
                    " / ".join(f"{t:.0f}" for t in [*f["seconds"], f["training_seconds"]]),
                    f"{sum(f['seconds']) + f['training_seconds']:.0f}"]
        assert row == expected
    mean = rows[-1]
    assert len(rows) == len(SEEDS) + 1 and mean[0] == "mean"
    for i in range(3):  # the mean row: every stage's mean over seeds
        assert mean[2 + i] == f"{statistics.fmean(f['scores'][i] for f in SEEDS.values()):.3f}"
    assert mean[5] == across([statistics.fmean(f["kinds"]["1-hop"][i] for f in SEEDS.values()) for i in range(3)])
    assert mean[7] == across([statistics.fmean(f["tools"][i] for f in SEEDS.values()) for i in range(3)], 2)
    assert mean[9].split(" / ")[-1] == f"{statistics.fmean(f['training_seconds'] for f in SEEDS.values()):.0f}"


def test_mean_gain_over_the_previous_and_the_first_stage_with_spread_and_one_question(seeds_dir):
    summaries = load_summaries([str(seeds_dir)])
    rl_gain, total_gain = gains(summaries)
    per_seed_rl = [f["scores"][2] - f["scores"][1] for f in SEEDS.values()]  # +2, +4, 0 questions
    per_seed_total = [f["scores"][2] - f["scores"][0] for f in SEEDS.values()]
    assert (rl_gain.over, rl_gain.to, total_gain.over, total_gain.to) == ("after SFT", "after GRPO", "before SFT",
                                                                          "after GRPO")
    assert rl_gain.per_seed == pytest.approx(per_seed_rl) and total_gain.per_seed == pytest.approx(per_seed_total)
    assert rl_gain.mean == pytest.approx(2 / 24) and rl_gain.sd == pytest.approx(statistics.stdev(per_seed_rl))
    assert rl_gain.per_seed_questions == pytest.approx([2, 4, 0])
    text = format_seeds_markdown(summaries)
    line = next(line for line in text.splitlines() if line.startswith("after GRPO - after SFT"))
    numbers = dict(re.findall(r"(mean|sd|min|max) ([+-]?\d+\.\d+)", line))
    assert float(numbers["mean"]) == pytest.approx(statistics.fmean(per_seed_rl), abs=5e-4)
    assert float(numbers["sd"]) == pytest.approx(statistics.stdev(per_seed_rl), abs=5e-4)
    assert (float(numbers["min"]), float(numbers["max"])) == pytest.approx((0.0, 4 / 24), abs=5e-4)
    assert "= +2.0 questions" in line
    total = next(line for line in text.splitlines() if line.startswith("after GRPO - before SFT"))
    assert f"mean {statistics.fmean(per_seed_total):+.3f} EM" in total
    assert "one question = 1/24 = 0.042 EM" in text


def test_two_stages_give_one_gain_and_different_n_a_range(tmp_path):
    a = synthetic_summary(0, [0.25, 0.5], {}, [1, 1], [0, 0], [1, 1], n=20, labels=("before", "after"))
    b = synthetic_summary(1, [0.25, 0.75], {}, [1, 1], [0, 0], [1, 1], n=24, labels=("before", "after"))
    for s in (a, b):
        (tmp_path / f"{s['seed']}.json").write_text(json.dumps(s))
    summaries = load_summaries([str(tmp_path / "0.json"), str(tmp_path / "1.json")])
    (gain,) = gains(summaries)
    assert gain.per_seed == [0.25, 0.5] and gain.per_seed_questions == [5.0, 12.0]
    assert "one question = 1/n for n = 20..24: 0.042..0.050 EM" in format_seeds_markdown(summaries)


def _write(path, summary):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary))
    return str(path)


def test_seeds_refuse_runs_that_cannot_be_compared(tmp_path):
    base = dict(scores=[0, 0.5], kinds={}, tools=[1, 1], truncation=[0, 0], seconds=[1, 1], labels=("a", "b"))
    first = _write(tmp_path / "s0.json", synthetic_summary(0, **base))
    other_stages = _write(tmp_path / "s1.json", synthetic_summary(1, **{**base, "labels": ("a", "c")}))
    with pytest.raises(ValueError, match="seeds are compared stage by stage"):
        load_summaries([first, other_stages])
    same_seed = _write(tmp_path / "again.json", synthetic_summary(0, **base))
    with pytest.raises(ValueError, match="the same seed twice"):
        load_summaries([first, same_seed])
    other_method = _write(tmp_path / "fr.json", synthetic_summary(2, **base, method="funreason"))
    with pytest.raises(ValueError, match="is a funreason run"):
        load_summaries([first, other_method])
    with pytest.raises(ValueError, match="is a rag_r1 run, not v2p"):
        load_summaries([first], method="v2p")
    with pytest.raises(FileNotFoundError, match="no demo summary at"):
        load_summaries([str(tmp_path / "empty_dir_that_does_not_exist")])


@pytest.mark.parametrize("content, message", [
    ('{"method": "rag_r1", "seed": 0, "metric": "EM"}', "missing stages"),
    ('{"method": "ppo", "seed": 0, "metric": "EM", "stages": [{}]}', "unknown method 'ppo'"),
    ('{"method": "rag_r1", "seed": 0, "metric": "EM", "stages": [{"label": "x", "score": 0}]}', "stage 0 lacks n"),
    ("[]", "expected a JSON object"),
])
def test_a_broken_summary_is_named(tmp_path, content, message):
    path = tmp_path / "summary.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        load_summary(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("spec, message", [
    ("after SFT=out/result.json", "expected LABEL=PATH@SECONDS"),  # no seconds
    ("out/result.json@3", "expected LABEL=PATH@SECONDS"),  # no label
    ("x=out/result.json@soon", "SECONDS must be a number"),
    ("x=out/result.json@-1", "SECONDS must be >= 0"),
])
def test_stage_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_spec(spec)
    assert parse_spec("after GRPO = a@b/result.json@12") == ("after GRPO", "a@b/result.json", 12.0)


def test_summary_command_writes_the_json_the_markdown_and_prints_a_row_per_stage(tmp_path, capsys):
    before = write_qa(tmp_path / "eval/0/result.json", [qa_question(0, 1, 0, 2), qa_question(1, 2, 0, 2)])
    after = write_qa(tmp_path / "eval/1/result.json", [qa_question(0, 1, 1, 1), qa_question(1, 2, 0, 2)])
    log = write_log(tmp_path / "logs/grpo.jsonl", grpo_lines([0.1, 0.4], [150.0, 90.0], [2.0, 1.5]))
    out = tmp_path / "run"
    assert main(["demo", "summary", "--method", "rag_r1", "--seed", "3", "--out", str(out),
                 "--stage", f"before SFT={before}@10", "--training", f"GRPO={log}@40",
                 "--stage", f"after GRPO={after}@12.5"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "rag_r1" and summary["seed"] == 3 and summary["metric"] == "EM"
    assert [s["label"] for s in summary["stages"]] == ["before SFT", "after GRPO"]
    assert [s["score"] for s in summary["stages"]] == [0.0, 0.5]
    assert summary["training"][0]["steps"] == [
        {"step": 1, "reward": 0.1, "response_length": 150.0, "tool_calls": 2.0},
        {"step": 2, "reward": 0.4, "response_length": 90.0, "tool_calls": 1.5}]
    assert summary["seconds_total"] == 10 + 40 + 12.5
    assert "| before SFT | 0.000 | 2 | 1-hop 0.000 · 2-hop 0.000 | 2.00 | 0.00 | 10 |" in printed
    assert "| after GRPO | 0.500 | 2 | 1-hop 1.000 · 2-hop 0.000 | 1.50 | 0.00 | 12 |" in printed
    assert "reward 0.100 -> 0.400" in printed
    assert (out / "summary.md").read_text().count("\n| ") == 4  # separator + two stages + the training


def test_summary_refuses_a_result_of_another_methods_evaluation(tmp_path, capsys):
    result = write_qa(tmp_path / "result.json", [qa_question(0, 1, 1, 1)])
    assert main(["demo", "summary", "--method", "v2p", "--seed", "0", "--out", str(tmp_path / "o"),
                 "--stage", f"before={result}@1"]) == 2
    err = capsys.readouterr().err
    assert "an `eval qa` result, but v2p stages are scored by `eval screenspot`" in err and str(result) in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match="at least one stage"):
        build_summary("rag_r1", 0, [])


def test_seeds_command_writes_markdown_and_html_into_the_seeds_folder(seeds_dir, capsys):
    assert main(["demo", "seeds", str(seeds_dir), "--method", "rag_r1"]) == 0
    printed = capsys.readouterr().out
    assert (seeds_dir / "seeds.md").read_text().strip() in printed
    assert printed.count("\n| 0 | ") + printed.count("\n| 1 | ") + printed.count("\n| 2 | ") == 3
    page = (seeds_dir / "seeds.html").read_text()
    assert page.count('<figure class="plot"') == 4  # score per stage; GRPO reward, response length, searches
    # several run folders need --out
    runs = [str(seeds_dir / "seed0"), str(seeds_dir / "seed1")]
    assert main(["demo", "seeds", *runs]) == 2
    assert "--out is needed" in capsys.readouterr().err


def test_timings_count_in_the_run_and_in_the_seeds_table(tmp_path, capsys):
    """`--timing SFT=240`: a stage with only a duration shows in the run's table, the total and the seeds table."""
    result = write_qa(tmp_path / "eval/result.json", [qa_question(0, 1, 1, 1)])
    runs = []
    for seed, sft_seconds in ((0, 240), (1, 250)):
        out = tmp_path / f"seed{seed}"
        assert main(["demo", "summary", "--method", "rag_r1", "--seed", str(seed), "--out", str(out),
                     "--stage", f"after SFT={result}@10", "--timing", f"SFT={sft_seconds}"]) == 0
        assert "| SFT | | | | | | " + str(sft_seconds) + " |" in capsys.readouterr().out
        summary = json.loads((out / "summary.json").read_text())
        assert summary["timings"] == [{"label": "SFT", "seconds": float(sft_seconds)}]
        assert summary["seconds_total"] == 10 + sft_seconds
        runs.append(str(out))
    header, rows = seeds_table(load_summaries(runs))
    assert header[-2] == "seconds (after SFT / SFT)"
    assert [row[-2] for row in rows] == ["10 / 240", "10 / 250", "10 / 245"]
    assert main(["demo", "summary", "--method", "rag_r1", "--seed", "0", "--out", str(tmp_path / "x"),
                 "--stage", f"a={result}@1", "--timing", "SFT"]) == 2
    assert "expected LABEL=SECONDS, got 'SFT'" in capsys.readouterr().err
