"""The package's layering: `data` and `eval` both sit on `agent_loops`/`generation` and never import each other's
in-process harness; `generation` and `agent_loops` import neither."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agentic_verl"


def imported_modules(folder: str) -> set[str]:
    """Every `agentic_verl.*` module the files of `folder` import (top-level or inside functions)."""
    found = set()
    for path in (PACKAGE / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("agentic_verl"):
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("agentic_verl"))
    return found


@pytest.mark.parametrize("folder, forbidden", [
    ("data", ("agentic_verl.eval",)),
    ("generation", ("agentic_verl.eval", "agentic_verl.data", "agentic_verl.agent_loops")),
    ("agent_loops", ("agentic_verl.eval", "agentic_verl.data")),
])
def test_layers_do_not_import_upwards(folder, forbidden):
    offending = sorted(m for m in imported_modules(folder) if m.startswith(forbidden))
    assert not offending, f"agentic_verl/{folder} imports {offending}"


@pytest.mark.parametrize("module", ["agent_loops/rag_r1_protocol.py", "agent_loops/prompts.py", "data/sft_steps.py"])
def test_protocol_rules_and_data_tools_load_without_verl(module):
    """Data tools read the rag_r1 protocol without importing verl (~10-25 s here)."""
    tree = ast.parse((PACKAGE / module).read_text())
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top_level if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in top_level if isinstance(n, ast.ImportFrom) and n.module]
    assert not [n for n in names if n.split(".")[0] in ("verl", "torch", "transformers")]
