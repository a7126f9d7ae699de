"""`agentic-verl view`: trajectory dumps -> a static HTML report (filter by reward range, failure, agent).

    AGENTIC_VERL_TRAJECTORY_DIR=outputs/traj bash recipes/...      # dumps while training or evaluating
    agentic-verl view outputs/traj/*.jsonl -o report.html           # or just the directory
"""

from __future__ import annotations

import sys
from pathlib import Path

_SHOW_SKIPPED = 20  # malformed lines named on stderr; all of them are listed in the report


def register(subparsers) -> None:
    parser = subparsers.add_parser("view", help="render trajectory dumps (JSONL) as a static HTML report")
    parser.add_argument("dumps", nargs="+", help="trajectory dump files (trajectories_<pid>.jsonl) or directories")
    parser.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: report.html)")
    parser.add_argument("--title", default="agentic_verl trajectories", help="page title")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from agentic_verl.viewer import load_dumps, render_report

    result = load_dumps(args.dumps)
    for line in result.skipped[:_SHOW_SKIPPED]:
        print(f"agentic-verl view: skipped {line}", file=sys.stderr)
    if len(result.skipped) > _SHOW_SKIPPED:
        print(f"agentic-verl view: ... and {len(result.skipped) - _SHOW_SKIPPED} more malformed line(s), "
              "all listed in the report", file=sys.stderr)
    if not result.trajectories:
        raise ValueError(f"no trajectory records in {', '.join(result.files)} "
                         f"({len(result.skipped)} malformed line(s) skipped, "
                         f"{len(result.unmatched_rewards)} reward record(s) without a trajectory)")
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_report(result, title=args.title), encoding="utf-8")
    print(f"wrote {output}: {len(result.trajectories)} trajectories from {len(result.files)} file(s), "
          f"{result.rewards_joined} reward record(s) joined, {len(result.skipped)} malformed line(s) skipped, "
          f"{len(result.unmatched_rewards)} reward record(s) without a trajectory")
    return 0
