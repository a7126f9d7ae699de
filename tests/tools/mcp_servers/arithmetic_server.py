"""A stdio MCP server with one tool, `add`, written with the official `mcp` SDK (MCPServer, ex-FastMCP), for the
GRPO run through `tool_agent_traced` (tests/cpu/test_mcp_grpo.py).

Every call it answers is appended as one JSON line (`{"a": ..., "b": ..., "sum": ..., "pid": ...}`) to the file
named by `--record PATH`, so a test reads what the server itself saw, not what the client says it sent. Arguments
that are not integers never reach `add`: the SDK validates them against the schema and answers with isError.

    python tests/tools/mcp_servers/arithmetic_server.py --record /tmp/calls.jsonl   # stdio
"""

from __future__ import annotations

import argparse
import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("arithmetic")
_record_path: str | None = None


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers and return their sum."""
    total = a + b
    if _record_path:
        # one short line per call, appended: several servers (one per trajectory) may share the file
        with open(_record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"a": a, "b": b, "sum": total, "pid": os.getpid()}) + "\n")
    return str(total)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", help="append each answered call to this file (JSON lines)")
    _record_path = parser.parse_args().record
    server.run("stdio")
