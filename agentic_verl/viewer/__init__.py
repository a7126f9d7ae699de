"""The trajectory viewer: JSONL dumps from agent_loops/trace.py -> one static, self-contained HTML page."""

from agentic_verl.viewer.load import LoadResult, load_dumps
from agentic_verl.viewer.render import render_report

__all__ = ["LoadResult", "load_dumps", "render_report"]
