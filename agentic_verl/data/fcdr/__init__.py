"""FCDR, FunReason's function-calling data refinement (arXiv 2505.20192): five checks per SFT sample (three asked
of a judge model behind any OpenAI-compatible endpoint, two rule-based), a regenerate step, a report.

`agentic-verl data refine-fc` runs it; pipeline.py has the flow, checks.py the checks, judge.py the client and its
cache. The names below are imported on first use (the CLI imports this package for `settings` alone).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EndpointError": "judge", "JudgeClient": "judge", "RefineSettings": "settings", "check_calls": "checks",
    "check_format": "checks", "load_prompts": "checks", "parse_verdict": "checks", "format_report": "pipeline",
    "load_samples": "pipeline", "make_sample": "pipeline", "refine": "pipeline",
}  # fmt: skip
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
