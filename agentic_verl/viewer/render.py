"""Render loaded trajectories as one static, self-contained HTML page.

All model and tool text is untrusted: it is written into the page only through `html.escape`, and the
filter data is embedded as JSON in a `<script type="application/json">` block with `<`, `>` and `&`
escaped as \\u003c etc., so a `</script>` inside a trajectory cannot end the block. The page loads
nothing from outside (a Content-Security-Policy with `default-src 'none'` says so to the browser too).
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any

from agentic_verl.agent_loops.trace import FAILURE_CATEGORIES
from agentic_verl.viewer.load import LoadResult, failures_of

_MAX_IDS_SHOWN = 400  # token ids shown for a run when the dump has no decoded text
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def render_report(result: LoadResult, title: str = "agentic_verl trajectories", plots: str = "") -> str:
    """The page; `plots`: an HTML fragment shown above the trajectories (the demo's inline-SVG plots,
    agentic_verl.demo.plots, whose text is escaped there)."""
    trajectories = result.trajectories
    filter_data = [
        {"id": f"t{i}", "reward": _reward(t), "failures": failures_of(t), "agent": str(t.get("agent_name", ""))}
        for i, t in enumerate(trajectories)
    ]
    agents = sorted({entry["agent"] for entry in filter_data})
    seen_failures = sorted({f for entry in filter_data for f in entry["failures"]} - set(FAILURE_CATEGORIES))
    values = {
        "title": _e(title),
        "summary": _e(_summary(result)),
        "failure_options": _options([("", "any or none"), ("__none__", "no failure"), ("__any__", "any failure")]
                                    + [(c, c) for c in (*FAILURE_CATEGORIES, *seen_failures)]),
        "agent_options": _options([("", "all")] + [(a, a) for a in agents]),
        "plots": plots,
        "problems": _problems(result),
        "body": "\n".join(_trajectory(f"t{i}", t) for i, t in enumerate(trajectories)),
        "data": script_json(filter_data),
    }
    page = fill_template("agentic_verl.viewer", "template.html", values)
    # json.loads turns a "\\ud800" escape in a dump into a lone surrogate, which no UTF-8 file can hold: show it
    # as U+FFFD like an undecodable byte (pairs were already joined by json.loads, so every one left is lone).
    return _LONE_SURROGATE.sub("\ufffd", page)


def fill_template(package: str, name: str, values: dict[str, str]) -> str:
    """The HTML template `name` of `package` with each {{key}} replaced by values[key], in one pass: substituted
    text is never scanned again for placeholders. First, a line `{{page_X}}` becomes page_X.html beside this module,
    the parts every report shares: page_head (the doctype, the content security policy, the header and filter-bar
    styles) and page_header (the end of the head, the title and summary)."""
    viewer = resources.files("agentic_verl.viewer")
    template = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    template = re.sub(r"^\{\{(page_\w+)\}\}\n",
                      lambda m: viewer.joinpath(f"{m.group(1)}.html").read_text(encoding="utf-8"), template, flags=re.M)
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], template)


def script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element: no `<`, `>` or `&` survives literally."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _reward(trajectory: dict) -> float | None:
    reward = trajectory.get("reward")
    return float(reward) if isinstance(reward, (int, float)) and reward == reward and abs(reward) != float("inf") \
        else None


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _e(value)
    return _e(f"{value:.{digits}f}".rstrip("0").rstrip(".") if isinstance(value, float) else value)


def _summary(result: LoadResult) -> str:
    rewards = [r for r in (_reward(t) for t in result.trajectories) if r is not None]
    parts = [f"{len(result.trajectories)} trajectories from {len(result.files)} file(s)"]
    if rewards:
        parts.append(f"mean reward {sum(rewards) / len(rewards):.3f} over {len(rewards)} scored")
    parts.append(f"{result.rewards_joined} reward record(s) joined")
    if result.skipped:
        parts.append(f"{len(result.skipped)} malformed line(s) skipped")
    return " · ".join(parts)


def _options(pairs: list[tuple[str, str]]) -> str:
    return "".join(f'<option value="{_e(value)}">{_e(label)}</option>' for value, label in pairs)


def _problems(result: LoadResult) -> str:
    blocks = []
    if result.skipped:
        items = "".join(f"<li>{_e(line)}</li>" for line in result.skipped)
        blocks.append(f"<details class=\"problems\"><summary>{len(result.skipped)} malformed line(s) skipped"
                      f"</summary><ul>{items}</ul></details>")
    if result.unmatched_rewards:
        items = "".join(f"<li>{_e(r['request_id'])}: reward {_fmt(r.get('reward'))}</li>"
                        for r in result.unmatched_rewards)
        blocks.append(f"<details class=\"problems\"><summary>{len(result.unmatched_rewards)} reward record(s) "
                      f"without a trajectory in these files</summary><ul>{items}</ul></details>")
    return "\n".join(blocks)


def _trajectory(element_id: str, t: dict) -> str:
    reward = _reward(t)
    reward_class = "none" if reward is None else ("low" if reward <= 0 else "")
    badges = [f'<span class="badge reward {reward_class}">reward {_fmt(reward) if reward is not None else "n/a"}</span>',
              f'<span class="badge agent">{_e(t.get("agent_name", "?"))}</span>']
    badges += [f'<span class="badge fail">{_e(f)}</span>' for f in failures_of(t)]
    metrics = t.get("metrics", {})
    meta = (f"turns {_fmt(metrics.get('num_turns', len(t['turns'])))} · tool calls {_fmt(metrics.get('num_tool_calls'))}"
            f" · tool latency {_fmt(metrics.get('tool_latency_s'))} s · generation {_fmt(metrics.get('generation_latency_s'))} s"
            f" · global step {_e(t.get('global_step'))} · {_e(t.get('_source'))}")
    return (
        f'<section class="traj" id="{element_id}">'
        f'<h2><span class="rid">{_e(t["request_id"])}</span>{"".join(badges)}</h2>'
        f'<div class="meta">{meta}</div>'
        f"{_reward_components(t)}{_turns(t)}{_tokens(t)}{_messages(t)}{_metrics(metrics)}"
        "</section>"
    )


def _reward_components(t: dict) -> str:
    components = t.get("reward_components") or {}
    if not components:
        return ""
    head = "".join(f"<th>{_e(k)}</th>" for k in components)
    cells = "".join(f"<td class=\"num\">{_fmt(v) if not isinstance(v, (dict, list)) else _e(json.dumps(v))}</td>"
                    for v in components.values())
    return f'<table class="components"><tr><th>reward components</th>{head}</tr><tr><td></td>{cells}</tr></table>'


def _turns(t: dict) -> str:
    rows = []
    calls_before = t.get("pre_turn_tool_calls") or []
    if calls_before:
        rows.append(f"<tr><td>–</td><td></td><td></td><td></td><td></td><td>{_calls(calls_before)}</td></tr>")
    for turn in t.get("turns", []):
        if not isinstance(turn, dict):
            continue
        rows.append(
            f"<tr><td class=\"num\">{_e(turn.get('index'))}</td>"
            f"<td class=\"num\">{_fmt(turn.get('policy_tokens'))}</td><td class=\"num\">{_fmt(turn.get('observation_tokens'))}</td>"
            f"<td class=\"num\">{_fmt(turn.get('generation_latency_s'))}</td><td>{_e(turn.get('stop_reason'))}</td>"
            f"<td>{_calls(turn.get('tool_calls') or [])}</td></tr>"
        )
    if not rows:
        return ""
    head = ("<tr><th>turn</th><th>policy tokens</th><th>observation tokens</th><th>generation s</th>"
            "<th>stop</th><th>tool calls</th></tr>")
    return f'<table class="turns">{head}{"".join(rows)}</table>'


def _calls(calls: list) -> str:
    parts = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        failure = f' <span class="failure-cell">{_e(call["failure"])}</span>' if call.get("failure") else ""
        arguments = call.get("arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        parts.append(
            f"<div class=\"call\"><b>{_e(call.get('name'))}</b> · {_fmt(call.get('latency_s'))} s{failure}"
            f"<pre>{_e(arguments)}</pre><details><summary>result ({len(str(call.get('result', '')))} chars)</summary>"
            f"<pre>{_e(call.get('result'))}</pre></details></div>"
        )
    return "".join(parts)


def _tokens(t: dict) -> str:
    ids, mask = t.get("response_ids", []), t.get("response_mask", [])
    segments = t.get("response_segments") or _segments_from_mask(mask)  # load.parse_line checked them
    if not segments:
        return ""
    spans = []
    for s in segments:
        start, count = s.get("start", 0), s.get("num_tokens", 0)
        kind = "policy" if s.get("policy") else "obs"
        text = s.get("text")
        if text is None:
            run = ids[start:start + count]
            text = "[" + " ".join(map(str, run[:_MAX_IDS_SHOWN])) + (" …" if len(run) > _MAX_IDS_SHOWN else "") + "]"
        label = "policy" if kind == "policy" else "tool/observation"
        spans.append(f'<span class="tok {kind}" title="{label} tokens {start}–{start + count - 1} ({count})">{_e(text)}</span>')
    legend = ('<div class="legend meta"><span class="tok policy key">policy tokens (mask 1)</span>'
              '<span class="tok obs key">tool / observation tokens (mask 0)</span></div>')
    return f'<details open><summary>response tokens ({len(ids)})</summary>{legend}<div class="tokens">{"".join(spans)}</div></details>'


def _segments_from_mask(mask: list) -> list[dict]:
    segments, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            segments.append({"policy": bool(mask[start]), "start": start, "num_tokens": i - start, "text": None})
            start = i
    return segments


def _messages(t: dict) -> str:
    messages = [m for m in t.get("messages", []) if isinstance(m, dict)]
    if not messages:
        return ""
    items = "".join(f"<div class=\"msg\"><b>{_e(m.get('role'))}</b><pre>{_e(_content(m.get('content')))}</pre></div>"
                    for m in messages)
    return f"<details><summary>conversation ({len(messages)} messages)</summary>{items}</details>"


def _content(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1)


def _metrics(metrics: dict) -> str:
    if not metrics:
        return ""
    rows = "".join(f"<tr><th>{_e(k)}</th><td class=\"num\">{_fmt(v)}</td></tr>" for k, v in metrics.items())
    return f"<details><summary>metrics</summary><table>{rows}</table></details>"
