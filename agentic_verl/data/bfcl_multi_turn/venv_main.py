"""The generator's side that runs in `.venv-bfcl` (started by `bridge.py`; reads and writes JSON lines).

    python -m agentic_verl.data.bfcl_multi_turn.venv_main generate --seed S --start I --count N --kinds base,...
            [--classes GorillaFileSystem,...]
        stdout: {"task": {"entry", "trajectory"}} per task index I..I+N-1 that gave a task, {"dropped": index,
        "reasons": {...}} for an index whose attempts all failed, then {"stats": {reason: count}}
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from agentic_verl.data.bfcl_multi_turn.tasks import KINDS, SAMPLERS, Rejected, build_task

MAX_ATTEMPTS = 20


def _generate(args) -> None:
    kinds = args.kinds.split(",")
    classes = args.classes.split(",") if args.classes else None
    stats: Counter = Counter()
    for index in range(args.start, args.start + args.count):
        kind = kinds[index % len(kinds)]
        reasons: Counter = Counter()
        for attempt in range(MAX_ATTEMPTS):
            try:
                task = build_task(args.seed, index, kind, attempt, classes)
            except Rejected as exc:
                reasons[exc.reason] += 1
                continue
            print(json.dumps({"task": task}, ensure_ascii=False), flush=True)
            break
        else:
            print(json.dumps({"dropped": index, "reasons": dict(reasons)}), flush=True)
        stats.update(reasons)
    print(json.dumps({"stats": dict(sorted(stats.items()))}), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="venv_main")
    sub = parser.add_subparsers(dest="command", required=True)
    generate = sub.add_parser("generate")
    generate.add_argument("--seed", type=int, required=True)
    generate.add_argument("--start", type=int, default=0)
    generate.add_argument("--count", type=int, required=True)
    generate.add_argument("--kinds", default=",".join(KINDS))
    generate.add_argument("--classes", default="", help="comma-separated simulator classes (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.kinds.split(",")) - set(KINDS))
    unknown += sorted(set(filter(None, args.classes.split(","))) - set(SAMPLERS))
    if unknown or args.seed < 0 or args.start < 0 or args.count < 0:
        parser.error(f"bad arguments: unknown kinds or classes {unknown}, seed {args.seed}, start {args.start}, "
                     f"count {args.count}")
    _generate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
