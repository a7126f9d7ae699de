"""Line charts as inline SVG: no plotting library, nothing loaded from outside (the pages' Content-Security-Policy is
`default-src 'none'`), every label escaped (labels come from files).

    line_chart("reward per GRPO step", [("seed 0", [(1, 0.2), (2, 0.4)]), ("seed 1", [(1, 0.3), (2, 0.3)])],
               x_label="step", y_label="reward")

Each series is a `<g class="series" data-series="NAME" data-points="K">` holding one polyline and one
`<circle class="point">` per point (with a tooltip); a point whose y is None is left out.
"""

from __future__ import annotations

import html
import math

PALETTE = ("#3b73d9", "#d9541c", "#2a9d48", "#8e44ad", "#c49000", "#0f8b8d", "#c2185b", "#5d6d7e")
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 130, 30, 44  # margins: y ticks, legend, title, x ticks + label


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def nice_ticks(lo: float, hi: float, count: int = 5, integer: bool = False) -> list[float]:
    """Round tick values covering [lo, hi], about `count` of them.

    >>> nice_ticks(0.0, 1.0)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(1, 3, integer=True)
    [1.0, 2.0, 3.0]
    """
    raw = (hi - lo) / max(count, 1) or 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _tick_text(value: float, ticks: list[float]) -> str:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    return f"{value:.{digits}f}"


def _span(values: list[float], fixed: tuple[float, float] | None) -> tuple[float, float]:
    if fixed is not None:
        return fixed
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        pad = abs(lo) * 0.1 or 0.5
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.08
    return lo - pad, hi + pad


def line_chart(title: str, series: list[tuple[str, list[tuple[float, float | None]]]], *, x_label: str = "",
               y_label: str = "", x_ticks: list[tuple[float, str]] | None = None,
               y_range: tuple[float, float] | None = None, width: int = 560, height: int = 300) -> str:
    """One SVG line chart. `x_ticks`: (x, label) pairs for a categorical x axis (default: numeric ticks);
    `y_range`: a fixed y axis (e.g. (0, 1) for scores)."""
    points = [(x, y) for _, pts in series for x, y in pts if y is not None]
    plot_w, plot_h = width - _LEFT - _RIGHT, height - _TOP - _BOTTOM
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
             f"<title>{_e(title)}</title>",
             f'<text x="{_LEFT}" y="18" font-size="13" font-weight="600" fill="#1d232b">{_e(title)}</text>',
             f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#c8cdd3"/>']
    if not points:
        parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{_TOP + plot_h / 2}" text-anchor="middle" font-size="12" '
                     'fill="#777">no data</text></svg>')
        return "".join(parts)
    x_lo, x_hi = _span([x for x, _ in points] + [x for x, _ in x_ticks or []], None)
    y_lo, y_hi = _span([y for _, y in points], y_range)

    def sx(x: float) -> float:
        return round(_LEFT + (x - x_lo) / (x_hi - x_lo) * plot_w, 2)

    def sy(y: float) -> float:
        return round(_TOP + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h, 2)

    y_ticks = nice_ticks(y_lo, y_hi)
    for value in y_ticks:
        parts.append(f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{sy(value)}" y2="{sy(value)}" stroke="#eceff2"/>'
                     f'<text x="{_LEFT - 6}" y="{sy(value) + 4}" text-anchor="end" font-size="11" fill="#444">'
                     f"{_tick_text(value, y_ticks)}</text>")
    numeric = nice_ticks(x_lo, x_hi, integer=all(float(x).is_integer() for x, _ in points))
    for x, label in x_ticks or [(v, _tick_text(v, numeric)) for v in numeric]:
        parts.append(f'<text x="{sx(x)}" y="{_TOP + plot_h + 16}" text-anchor="middle" font-size="11" fill="#444">'
                     f"{_e(label)}</text>")
    parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{height - 6}" text-anchor="middle" font-size="11" '
                 f'fill="#444">{_e(x_label)}</text>'
                 f'<text transform="translate(14 {_TOP + plot_h / 2}) rotate(-90)" text-anchor="middle" '
                 f'font-size="11" fill="#444">{_e(y_label)}</text>')
    for i, (name, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        kept = [(x, y) for x, y in pts if y is not None]
        parts.append(f'<g class="series" data-series="{_e(name)}" data-points="{len(kept)}">'
                     f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                     f'points="{" ".join(f"{sx(x)},{sy(y)}" for x, y in kept)}"/>')
        parts += [f'<circle class="point" cx="{sx(x)}" cy="{sy(y)}" r="3.5" fill="{color}">'
                  f"<title>{_e(name)}: {_e(_label_of(x, x_ticks))}, {y:.4g}</title></circle>" for x, y in kept]
        legend_y = _TOP + 12 + 16 * i
        parts.append(f'<line x1="{width - _RIGHT + 10}" x2="{width - _RIGHT + 26}" y1="{legend_y - 4}" '
                     f'y2="{legend_y - 4}" stroke="{color}" stroke-width="2"/>'
                     f'<text x="{width - _RIGHT + 30}" y="{legend_y}" font-size="11" fill="#1d232b">{_e(name)}</text>'
                     "</g>")
    parts.append("</svg>")
    return "".join(parts)


def _label_of(x: float, x_ticks: list[tuple[float, str]] | None) -> str:
    for tick, label in x_ticks or []:
        if tick == x:
            return label
    return f"{x:g}"
