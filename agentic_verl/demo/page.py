"""The demos' static, self-contained pages (inline SVG, no script; every text from files escaped; a
Content-Security-Policy that loads nothing): seeds.html (the seeds table, the gains and the plots across seeds) and,
through `html_page`, the learning demo's report (learning_report.py)."""

from __future__ import annotations

import html

from agentic_verl.demo.plots import seeds_plots
from agentic_verl.demo.seeds import gain_lines, seeds_table

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{title}</title>
<style>
  body {{ font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d232b;
         background: #f4f5f7; }}
  header {{ background: #1d2733; color: #fff; padding: 12px 20px; }}
  header h1 {{ font-size: 18px; margin: 0; }}
  main {{ padding: 12px 20px; }}
  table {{ border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; background: #fff; }}
  th, td {{ border: 1px solid #dde1e6; padding: 3px 7px; text-align: left; }}
  th {{ background: #f0f2f5; }}
  tr.mean td {{ font-weight: 600; }}
  ul.gains {{ background: #fff; border: 1px solid #d5d9df; border-radius: 6px; padding: 8px 28px; }}
</style>
</head>
<body>
<header><h1>{title}</h1></header>
<main>
{body}
</main>
</body>
</html>
"""


def html_page(title: str, body: str) -> str:
    """A page of the demos' style: `title` is escaped here, `body` is HTML whose file text the caller escaped."""
    return _PAGE.format(title=html.escape(title), body=body)


def html_table(header: list[str], rows: list[list[str]], table_id: str, last_row_class: str = "") -> str:
    """A table, every cell escaped; `last_row_class` marks the last row (e.g. a mean)."""
    e = html.escape
    marked = f' class="{e(last_row_class, quote=True)}"' if last_row_class else ""
    return (f'<table id="{e(table_id, quote=True)}"><tr>' + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>"
            + "".join(f"<tr{marked if i == len(rows) - 1 else ''}>" + "".join(f"<td>{e(c)}</td>" for c in r)
                      + "</tr>" for i, r in enumerate(rows)) + "</table>")


def render_seeds_page(summaries: list[dict]) -> str:
    header, rows = seeds_table(summaries)
    e = html.escape
    first = summaries[0]
    body = (html_table(header, rows, "seeds", last_row_class="mean")  # the last row is the mean over seeds
            + '<ul class="gains">' + "".join(f"<li>{e(line)}</li>" for line in gain_lines(summaries)) + "</ul>"
            + seeds_plots(summaries) + f"<p>Sources: {e(', '.join(s.get('_path', '?') for s in summaries))}</p>")
    return html_page(f"{first['method']} demo: {first['metric']} over {len(summaries)} seed(s)", body)
