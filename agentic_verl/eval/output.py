"""What every `agentic-verl eval ...` writes: OUT/result.json (the whole result) and OUT/table.md (its tables)."""

from __future__ import annotations

import json
from pathlib import Path


def write_run(result: dict, out_dir: str | Path, *tables: str) -> Path:
    """Write OUT/result.json and OUT/table.md (the tables, a blank line apart); return result.json's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a lone surrogate (a model's "\\ud800" decoded into a call's argument) has no UTF-8 form: written as its JSON
    # escape, it reads back as the same string
    (out / "result.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8",
                                     errors="backslashreplace")
    (out / "table.md").write_text("\n\n".join(tables) + "\n")
    return out / "result.json"
