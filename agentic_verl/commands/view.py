"""`agentic-verl view`: trajectory dumps -> a static HTML report (filter by reward range, failure, agent).

    AGENTIC_VERL_TRAJECTORY_DIR=outputs/traj bash recipes/...      # dumps while training or evaluating
    agentic-verl view outputs/traj/*.jsonl -o report.html           # or just the directory
    agentic-verl view outputs/demo/eval/*/trajectories --summary outputs/demo/summary.json -o report.html
                                                                    # plots of a demo run on top (docs/demo_report.md)
"""

from __future__ import annotations

import sys
from pathlib import Path

_SHOW_SKIPPED = 20  # malformed lines named on stderr; all of them are listed in the report


def register(subparsers) -> None:
    parser = subparsers.add_parser("view", help="render trajectory dumps (JSONL) as a static HTML report")
    parser.add_argument("dumps", nargs="*", help="trajectory dump files (trajectories_<pid>.jsonl) or directories "
                        "(none: a page with the --summary plots only)")
    parser.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: report.html)")
    parser.add_argument("--title", default="agentic_verl trajectories", help="page title")
    parser.add_argument("--summary", default=None, help="a demo run's summary.json (`agentic-verl demo summary`): "
                        "its plots (score per stage, reward and response length per GRPO step) go on top")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from agentic_verl.viewer import LoadResult, load_dumps, render_report

    if not args.dumps and not args.summary:
        raise ValueError("give trajectory dumps, --summary SUMMARY_JSON, or both")
    plots = ""
    if args.summary:
        from agentic_verl.demo import load_summary, run_plots

        plots = run_plots(load_summary(args.summary))
    result = load_dumps(args.dumps) if args.dumps else LoadResult()
    for line in result.skipped[:_SHOW_SKIPPED]:
        print(f"agentic-verl view: skipped {line}", file=sys.stderr)
    if len(result.skipped) > _SHOW_SKIPPED:
        print(f"agentic-verl view: ... and {len(result.skipped) - _SHOW_SKIPPED} more malformed line(s), "
              "all listed in the report", file=sys.stderr)
    if args.dumps and not result.trajectories:
        raise ValueError(f"no trajectory records in {', '.join(result.files)} "
                         f"({len(result.skipped)} malformed line(s) skipped, "
                         f"{len(result.unmatched_rewards)} reward record(s) without a trajectory)")
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_report(result, title=args.title, plots=plots), encoding="utf-8")
    print(f"wrote {output}: {len(result.trajectories)} trajectories from {len(result.files)} file(s), "
          f"{result.rewards_joined} reward record(s) joined, {len(result.skipped)} malformed line(s) skipped, "
          f"{len(result.unmatched_rewards)} reward record(s) without a trajectory"
          + (f"; plots from {args.summary}" if args.summary else ""))
    return 0
