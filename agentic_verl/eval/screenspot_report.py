"""The `eval screenspot` HTML report: every sample's screenshot with the ground-truth box, the predicted click and
(pointer models) the pointer heatmap drawn over it, filterable by outcome, element type, group and benchmark.

One static, self-contained page, built like the trajectory viewer (viewer/render.py): images are inline data URLs
(a JPEG thumbnail of the screenshot, a PNG of the heatmap), the overlay is SVG in the screenshot's own pixel
coordinates, all model and data text goes through `html.escape`, the filter data sits in a JSON script block with
`<`, `>`, `&` escaped, and a Content-Security-Policy allows nothing from outside.

    report = ScreenSpotReport(max_samples=300)
    result = evaluate(settings, report=report)        # eval/screenspot.py calls report.add(...) per sample
    Path("report.html").write_text(report.render(result))
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import numpy as np

from agentic_verl.viewer.render import fill_template, script_json


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _data_url(image, fmt: str) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 80} if fmt == "JPEG" else {}))
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def heatmap_image(probs):
    """(rows, cols) probabilities -> an RGBA PIL image of the same size: orange-red, opacity ~ probability / max."""
    from PIL import Image

    probs = np.asarray(probs, dtype=np.float64)
    scaled = probs / probs.max() if probs.max() > 0 else probs
    rgba = np.zeros((*probs.shape, 4), dtype=np.uint8)
    rgba[..., 0], rgba[..., 1] = 255, 60
    rgba[..., 3] = np.round(210 * np.clip(scaled, 0, 1)).astype(np.uint8)
    return Image.fromarray(rgba, mode="RGBA")


class ScreenSpotReport:
    def __init__(self, max_samples: int | None = 300, thumb_width: int = 480):
        self.max_samples, self.thumb_width = max_samples, thumb_width
        self._figures: dict[int, str] = {}
        self._filters: dict[int, dict] = {}
        self.left_out = 0

    def add(self, index: int, sample, image, prediction, record: dict) -> None:
        """One sample (the first `max_samples` by index are drawn)."""
        if self.max_samples is not None and index >= self.max_samples:
            self.left_out += 1
            return
        element_id = f"s{index}"
        outcome = "hit" if record["hit"] else "miss"
        self._filters[index] = {"id": element_id, "outcome": outcome, "type": sample.element_type,
                                "group": sample.group, "benchmark": sample.benchmark}
        self._figures[index] = self._figure(element_id, outcome, sample, image, prediction, record)

    def _figure(self, element_id, outcome, sample, image, prediction, record) -> str:
        width, height = image.size
        thumb = image if width <= self.thumb_width else image.resize(
            (self.thumb_width, max(1, round(height * self.thumb_width / width))))
        layers = []
        if prediction.heatmap is not None:
            layers.append(f'<image class="heat" href="{_data_url(heatmap_image(prediction.heatmap), "PNG")}" x="0" '
                          f'y="0" width="{width}" height="{height}" preserveAspectRatio="none"/>')
        x1, y1, x2, y2 = sample.bbox
        layers.append(f'<rect class="gt" x="{x1:.1f}" y="{y1:.1f}" width="{x2 - x1:.1f}" height="{y2 - y1:.1f}"/>')
        if prediction.point is not None:
            px, py = prediction.point
            r = max(width, height) / 60
            layers.append(f'<g class="click"><circle cx="{px:.1f}" cy="{py:.1f}" r="{r:.1f}"/>'
                          f'<line x1="{px - 2 * r:.1f}" y1="{py:.1f}" x2="{px + 2 * r:.1f}" y2="{py:.1f}"/>'
                          f'<line x1="{px:.1f}" y1="{py - 2 * r:.1f}" x2="{px:.1f}" y2="{py + 2 * r:.1f}"/></g>')
        point = "none" if prediction.point is None else f"({prediction.point[0]:.1f}, {prediction.point[1]:.1f})"
        meta = " · ".join(_e(v) for v in (
            sample.benchmark, sample.group, sample.platform, sample.element_type,
            f"box [{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}]", f"click {point}", f"{width}x{height}",
            f"input {record['input_size'][0]}x{record['input_size'][1]}" if record.get("input_size") else None,
            record.get("failure"), f"{record['seconds']:.2f} s") if v)
        answer = f"<pre class=\"answer\">{_e(prediction.text)}</pre>" if prediction.text else ""
        return (f'<figure class="sample {outcome}" id="{element_id}">'
                f'<div class="shot"><img src="{_data_url(thumb.convert("RGB"), "JPEG")}" alt="screenshot '
                f'{_e(sample.id)}"><svg viewBox="0 0 {width} {height}" preserveAspectRatio="none">{"".join(layers)}'
                f'</svg></div><figcaption><span class="badge {outcome}">{outcome}</span> '
                f'<span class="instruction">{_e(sample.instruction)}</span><div class="meta">{meta}</div>{answer}'
                f"</figcaption></figure>")

    def render(self, result: dict, title: str | None = None) -> str:
        from agentic_verl.eval.screenspot import _label, format_breakdown_table, format_paper_table

        filters = [self._filters[i] for i in sorted(self._filters)]
        summary = (f"{_label(result)} · accuracy {result['summary']['accuracy']:.3f} over {result['summary']['n']} "
                   f"samples · {len(filters)} drawn" + (f", {self.left_out} left out" if self.left_out else ""))

        def options(key: str) -> str:
            values = sorted({f[key] for f in filters if f[key]})
            return '<option value="">all</option>' + "".join(f'<option value="{_e(v)}">{_e(v)}</option>'
                                                             for v in values)

        values = {
            "title": _e(title or f"ScreenSpot evaluation: {_label(result)}"),
            "summary": _e(summary),
            "tables": _markdown_tables(format_paper_table(result) + "\n\n" + format_breakdown_table(result)),
            "type_options": options("type"), "group_options": options("group"),
            "benchmark_options": options("benchmark"),
            "body": "\n".join(self._figures[i] for i in sorted(self._figures)),
            "data": script_json(filters),
        }
        return fill_template("agentic_verl.eval", "screenspot_report.html", values)


def _markdown_tables(markdown: str) -> str:
    """Our own markdown tables (format_*_table) as HTML tables; cells escaped."""
    blocks = []
    for block in markdown.strip().split("\n\n"):
        rows = [line.strip().strip("|").split("|") for line in block.splitlines() if not line.startswith("|---")]
        head = "".join(f"<th>{_e(c.strip())}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{_e(c.strip().strip('*'))}</td>" for c in row) + "</tr>"
                       for row in rows[1:])
        blocks.append(f"<table><tr>{head}</tr>{body}</table>")
    return "\n".join(blocks)
