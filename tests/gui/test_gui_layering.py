"""Where the GUI code sits: rewards never import the V2P package (labels are not rewards), the V2P package never
imports evaluation, data or the CLI, and importing `agentic_verl.v2p` or the data loaders pulls in no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_layering import imported_modules


@pytest.mark.parametrize("folder, forbidden", [
    ("rewards", ("agentic_verl.v2p",)),
    ("v2p", ("agentic_verl.eval", "agentic_verl.data", "agentic_verl.commands")),
])
def test_gui_layers(folder, forbidden):
    offending = sorted(m for m in imported_modules(folder) if m.startswith(forbidden))
    assert not offending, f"agentic_verl/{folder} imports {offending}"


def test_light_modules_import_without_torch():
    code = ("import sys, agentic_verl.v2p, agentic_verl.data.gui_grounding, agentic_verl.v2p.synthetic; "
            "sys.exit(int('torch' in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
