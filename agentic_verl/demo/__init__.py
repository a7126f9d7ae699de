"""Demo summaries: what each miniature's stages scored (from the evaluations' own result.json), its training curves
(verl's file logger), a table per run and across seeds, and inline-SVG plots. docs/demo_report.md. The learning
demo (`make demo-learn`): its task in learning.py, its report in learning_report.py, its steps in learn.py."""

from agentic_verl.demo.methods import METHODS, get_method
from agentic_verl.demo.page import render_seeds_page
from agentic_verl.demo.plots import run_plots, seeds_plots
from agentic_verl.demo.seeds import format_seeds_markdown, gains, load_summaries
from agentic_verl.demo.stages import detect_kind, stage_record
from agentic_verl.demo.summary import build_summary, format_run_table, load_summary, parse_spec, write_summary
from agentic_verl.demo.training import training_record

__all__ = ["METHODS", "build_summary", "detect_kind", "format_run_table", "format_seeds_markdown",
           "gains", "get_method", "load_summaries", "load_summary", "parse_spec", "render_seeds_page", "run_plots",
           "seeds_plots", "stage_record", "training_record", "write_summary"]
