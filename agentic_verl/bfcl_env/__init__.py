"""BFCL's multi-turn API simulators (file system, messaging, posting, tickets, trading, travel, vehicle, math) as an
environment for multi-turn agent loops: a loopback HTTP server that runs in `.venv-bfcl` with bfcl-eval, one
session of simulator instances per trajectory, and bfcl-eval's own multi-turn checker as the verdict.

- protocol: the wire format and its pure parts (validation, output formatting, call strings), standard library;
- simulators, sessions, checker, server: the server side, imported only in `.venv-bfcl` (they import bfcl-eval);
  simulators runs bfcl-eval's classes and executor so that no run sees another's state (private copies of
  bfcl-eval's module-level records, executor globals removed), and checker gives bfcl-eval's verdict, for the
  server and the task generator (`agentic_verl.data.bfcl_multi_turn`: `simulators.execute_steps`,
  `checker.check_call_strings`) alike;
- data: BFCL's multi-turn files in the installed bfcl-eval (function docs, the 800 questions), read in either venv;
- venv (`.venv-bfcl`, the environment of a child there), process.BfclEnvProcess (start a server and wait for it),
  client.BfclEnvClient (async): the main package's side.

`BfclEnvClient`, `BfclEnvError` and `BfclEnvProcess` are importable from here; they load on first use, so that the
server imports this package in `.venv-bfcl` without aiohttp. See docs/bfcl_env.md.
"""

_LAZY = {
    "BfclEnvClient": "agentic_verl.bfcl_env.client",
    "BfclEnvError": "agentic_verl.bfcl_env.client",
    "BfclEnvProcess": "agentic_verl.bfcl_env.process",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentic_verl.bfcl_env' has no attribute {name!r}")
