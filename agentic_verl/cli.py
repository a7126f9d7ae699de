"""`agentic-verl`: the single entry point for everything that is not a training run.

Each subcommand lives in `agentic_verl/commands/<name>.py` with a `register(subparsers)` function
that adds its parser and sets `handler`; heavy imports happen inside handlers so `--help` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from agentic_verl.net import EndpointError

COMMAND_MODULES = (
    "agentic_verl.commands.doctor",
    "agentic_verl.commands.index",
    "agentic_verl.commands.data",
    "agentic_verl.commands.serve",
    "agentic_verl.commands.view",
    "agentic_verl.commands.eval",
    "agentic_verl.commands.cpu_model",
    "agentic_verl.commands.cpu_cleanup",
    "agentic_verl.commands.preflight",
    "agentic_verl.commands.demo",
    "agentic_verl.commands.tools",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentic-verl",
        description="agentic_verl: tools, indexes, servers, data and evaluation for agent RL on verl. "
        "Training runs through verl's own trainers: bash recipes/<method>/<stage>.sh",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    # user errors (bad input, an endpoint that is down or serves another model): one clear line, no traceback
    except (ValueError, FileNotFoundError, ImportError, EndpointError) as exc:
        print(f"agentic-verl {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
