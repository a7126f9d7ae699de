"""The runnable examples in the demo modules' docstrings."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["agentic_verl.demo.stages", "agentic_verl.demo.summary", "agentic_verl.demo.svg"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0, f"{module} has no examples"
    assert result.failed == 0
