"""The demo plots as HTML fragments of inline SVG (svg.py): score per stage, and reward, response length and tool
calls per training step; for one run (`agentic-verl view --summary`) or across seeds (`agentic-verl demo seeds`)."""

from __future__ import annotations

import html

from agentic_verl.demo.methods import get_method
from agentic_verl.demo.svg import line_chart

STEP_METRICS = (("reward", "reward"), ("response_length", "response length (tokens)"))


def run_plots(summary: dict) -> str:
    """One run: its score per stage (overall and by kind) and its training curves (a series per training)."""
    stages = summary["stages"]
    ticks = [(float(i), s["label"]) for i, s in enumerate(stages)]
    kinds = list(dict.fromkeys(k for s in stages for k in s["by_kind"]))
    series = [(summary["metric"], [(float(i), s["score"]) for i, s in enumerate(stages)])]
    series += [(kind, [(float(i), s["by_kind"].get(kind)) for i, s in enumerate(stages)]) for kind in kinds]
    charts = [_figure("score", line_chart(f"{summary['metric']} per stage (seed {summary['seed']})", series,
                                          x_label="stage", y_label=summary["metric"], x_ticks=ticks, y_range=(0, 1)))]
    trainings = summary.get("training") or []
    for key, title, name in _step_charts(summary["method"]):
        curves = [(t["label"], [(float(s["step"]), s.get(key)) for s in t["steps"]]) for t in trainings]
        if any(y is not None for _, pts in curves for _, y in pts):
            charts.append(_figure(key, line_chart(f"{title} per training step", curves, x_label="step",
                                                  y_label=name)))
    heading = f"{summary['method']}, seed {summary['seed']}: {summary['metric']} per stage and training curves"
    return _section(heading, charts)


def seeds_plots(summaries: list[dict]) -> str:
    """Across seeds: the score per stage, a series per seed; each training's curves, a series per seed."""
    first = summaries[0]
    ticks = [(float(i), s["label"]) for i, s in enumerate(first["stages"])]
    scores = [(f"seed {s['seed']}", [(float(i), st["score"]) for i, st in enumerate(s["stages"])]) for s in summaries]
    charts = [_figure("score", line_chart(f"{first['metric']} per stage, per seed", scores, x_label="stage",
                                          y_label=first["metric"], x_ticks=ticks, y_range=(0, 1)))]
    labels = list(dict.fromkeys(t["label"] for s in summaries for t in s.get("training") or []))
    for label in labels:
        for key, title, name in _step_charts(first["method"]):
            curves = [(f"seed {s['seed']}", [(float(step["step"]), step.get(key)) for t in s.get("training") or []
                                             if t["label"] == label for step in t["steps"]]) for s in summaries]
            if any(y is not None for _, pts in curves for _, y in pts):
                charts.append(_figure(key, line_chart(f"{label}: {title} per step, per seed", curves, x_label="step",
                                                      y_label=name)))
    return _section(f"{first['method']}: {len(summaries)} seeds", charts)


def _step_charts(method: str) -> list[tuple[str, str, str]]:
    """(step key, chart title, axis name) for the training curves."""
    tool = get_method(method).tool_calls_name
    return [*((key, name.split(" (")[0], name) for key, name in STEP_METRICS),
            ("tool_calls", f"{tool} per trajectory", tool)]


def _figure(kind: str, svg: str) -> str:
    return f'<figure class="plot" data-plot="{html.escape(kind, quote=True)}" style="margin:0">{svg}</figure>'


def _section(heading: str, charts: list[str]) -> str:
    return ('<section class="plots" style="background:#fff;border:1px solid #d5d9df;border-radius:6px;'
            'padding:10px 14px;margin:0 0 14px">'
            f'<h2 style="font-size:15px;margin:0 0 8px">{html.escape(heading)}</h2>'
            f'<div style="display:flex;flex-wrap:wrap;gap:12px">{"".join(charts)}</div></section>')


def learning_plots(runs: list[dict]) -> str:
    """The learning demo: reward per GRPO step, a series per run (the learning run and its lr-0 control, on one
    axis), and the tool calls per sample (a policy that stopped calling would show it there)."""
    def curve(key: str) -> list[tuple[str, list[tuple[float, float | None]]]]:
        return [(run["label"], [(float(s["step"]), s.get(key)) for s in run["steps"]]) for run in runs]

    charts = [_figure("reward", line_chart("reward per GRPO step (share of right calls)", curve("reward"),
                                           x_label="step", y_label="reward", y_range=(0, 1), width=720))]
    if any(y is not None for _, pts in curve("tool_calls") for _, y in pts):
        charts.append(_figure("tool_calls", line_chart("calls per sample", curve("tool_calls"), x_label="step",
                                                       y_label="calls", y_range=(0, 2), width=360)))
    return _section("GRPO beside its zero-learning-rate control", charts)
