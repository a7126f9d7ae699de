"""The learning demo's report (`make demo-learn`): the reward per GRPO step of the learning run beside its
zero-learning-rate control, as OUT/rewards.json and OUT/report.html (a table and inline-SVG plots, page.py's page).

    runs = [learning_run("GRPO, lr 5e-3", "out/grpo/metrics.jsonl", 420), learning_run("control, lr 0", ...)]
    write_learning_report("out", runs, seconds_total=700)

rewards.json: {"runs": [{"label", "seconds", "source", "rewards": [reward per step], "steps": [...]}, ...],
"seconds_total", "note"}; a step is training.training_record's (step, reward, response_length, tool_calls).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from agentic_verl.demo.page import html_page, html_table
from agentic_verl.demo.plots import learning_plots
from agentic_verl.demo.summary import fmt
from agentic_verl.demo.training import training_record

WINDOW = 4  # steps averaged at each end (the learning test's window)


def learning_run(label: str, path: str | Path, seconds: float | None) -> dict:
    """One GRPO run of the task, from verl's file-logger output: its steps and its reward per step."""
    record = training_record(label, path, seconds, method="funreason")
    return {**record, "rewards": [s["reward"] for s in record["steps"]]}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def learning_table(runs: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): a row per run with its first and last steps' mean reward, its mean over all steps and the
    calls per sample at the end."""
    header = ["run", "steps", f"reward, first {WINDOW} steps", f"reward, last {WINDOW} steps", "reward, all steps",
              "calls per sample, last step", "seconds"]
    rows = []
    for run in runs:
        rewards, window = run["rewards"], min(WINDOW, len(run["rewards"]))
        rows.append([run["label"], str(len(rewards)), fmt(_mean(rewards[:window])), fmt(_mean(rewards[-window:])),
                     fmt(_mean(rewards)), fmt(run["steps"][-1].get("tool_calls"), 2), fmt(run["seconds"], 0)])
    return header, rows


def gain_line(runs: list[dict]) -> str:
    """The learning run's last steps against the control's mean over all its steps (the SFT start's reward, drawn
    anew every step: its spread is the noise a gain is measured against)."""
    learned, control = runs[0]["rewards"], runs[-1]["rewards"]
    window = min(WINDOW, len(learned))
    last, base = _mean(learned[-window:]), _mean(control)
    spread = f"{min(control):.3f}-{max(control):.3f}"
    return (f"{runs[0]['label']}: mean reward of the last {window} steps {last:.3f}, against {base:.3f} for "
            f"{runs[-1]['label']} over its {len(control)} steps (per step {spread}): {last - base:+.3f}")


def render_learning_page(runs: list[dict], note: str = "", seconds_total: float | None = None) -> str:
    e = html.escape
    header, rows = learning_table(runs)
    per_step = html_table(["step", *(run["label"] for run in runs)],
                          [[str(i + 1), *(fmt(run["rewards"][i]) if i < len(run["rewards"]) else "-" for run in runs)]
                           for i in range(max(len(run["rewards"]) for run in runs))], "rewards")
    total = "" if seconds_total is None else f" {fmt(seconds_total, 0)} s in all."
    body = (f"<p>{e(note)}{e(total)}</p>" + f'<ul class="gains"><li>{e(gain_line(runs))}</li></ul>'
            + learning_plots(runs) + html_table(header, rows, "runs")
            + "<h2 style=\"font-size:15px\">Reward per step</h2>" + per_step
            + f"<p>Sources: {e(', '.join(run['source'] for run in runs))}</p>")
    return html_page("agentic_verl: GRPO learning, beside its zero-learning-rate control", body)


def format_learning_table(runs: list[dict]) -> str:
    header, rows = learning_table(runs)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*lines, "", gain_line(runs)])


def write_learning_report(out: str | Path, runs: list[dict], seconds_total: float | None = None,
                          note: str = "") -> tuple[Path, Path, str]:
    """OUT/report.html and OUT/rewards.json; returns their paths and the table as Markdown."""
    if len(runs) < 2:
        raise ValueError("the report needs the learning run and its control (two runs)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    html_path, json_path = out / "report.html", out / "rewards.json"
    html_path.write_text(render_learning_page(runs, note, seconds_total), encoding="utf-8")
    json_path.write_text(json.dumps({"runs": runs, "seconds_total": seconds_total, "note": note}, indent=1) + "\n",
                         encoding="utf-8")
    return html_path, json_path, format_learning_table(runs)
