"""The runnable examples in the reward modules' docstrings."""

from __future__ import annotations

import doctest
import importlib

import pytest

import agentic_verl.rewards  # noqa: F401  (registers every component, which the examples use)


@pytest.mark.parametrize(
    "module",
    [
        "agentic_verl.rewards.qa",
        "agentic_verl.rewards.format",
        "agentic_verl.rewards.gui",
        "agentic_verl.rewards.compose",
        "agentic_verl.rewards.numeric",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module} has no examples"
    assert result.failed == 0
