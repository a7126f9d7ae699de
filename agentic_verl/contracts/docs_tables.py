"""docs/contracts.md's tables, rendered from the contracts (tests/test_contracts.py checks the page is up to date).

    python -m agentic_verl.contracts.docs_tables docs/contracts.md     # rewrite the generated regions in place

A generated region sits between `<!-- generated: NAME -->` and `<!-- end generated -->`; NAME is `parts` (which
parts use public hooks only) or `contracts` (one table per group of internals.GROUPS).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from agentic_verl.contracts.internals import GROUPS
from agentic_verl.contracts.surface import markdown_table

REGION = re.compile(r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _file(path: str) -> str:
    return f"`{path.removeprefix('agentic_verl/')}`"


def contract_tables(groups=GROUPS) -> str:
    parts = []
    for title, contracts in groups:
        rows = [f"### {title}", "", "| Symbol | | Checked | We rely on | Why | Our files |", "|---|---|---|---|---|---|"]
        for c in contracts:
            checked = ", ".join(c.checks) + (f" (`{c.probe}`)" if c.probe else "")
            rows.append(f"| `{c.target}` | {'hook' if c.public else '**internal**'} | {checked} | {_cell(c.relies_on)} "
                        f"| {_cell(c.why)} | {', '.join(map(_file, c.used_by))} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


RENDERERS = {"parts": markdown_table, "contracts": contract_tables}


def render(page: str) -> str:
    """`page` with every generated region replaced by its current rendering."""
    def replace(match: re.Match) -> str:
        name = match.group("name")
        if name not in RENDERERS:
            raise ValueError(f"unknown generated region {name!r}; known: {', '.join(RENDERERS)}")
        return f"{match.group(1)}\n{RENDERERS[name]()}\n\n{match.group(4)}"  # blank lines: Markdown, not HTML

    return REGION.sub(replace, page)


def main(argv=None) -> int:
    for path in (argv if argv is not None else sys.argv[1:]) or ["docs/contracts.md"]:
        page = Path(path)
        page.write_text(render(page.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
