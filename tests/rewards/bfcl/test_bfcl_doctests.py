"""The runnable examples in the BFCL modules' docstrings."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "agentic_verl.rewards.bfcl.decode",
        "agentic_verl.rewards.bfcl.check",
        "agentic_verl.rewards.bfcl._compare",
        "agentic_verl.rewards.bfcl.convert",
        "agentic_verl.rewards.bfcl.match",
        "agentic_verl.rewards.bfcl.render",
        "agentic_verl.rewards.bfcl.reward",
        "agentic_verl.rewards.bfcl.multi_turn_entry",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0, f"{module} has no examples"
    assert result.failed == 0
