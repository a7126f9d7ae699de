"""Subcommands of the `agentic-verl` CLI, one module each (see agentic_verl/cli.py)."""
