"""A small stdio MCP server for the McpTool tests, written with the official `mcp` SDK (MCPServer, ex-FastMCP).

Tools: `increment` (state kept in this process, so one connection per trajectory isolates it), `fail` (raises:
the SDK answers with isError), `sleep` (slow, for timeouts), `crash` (kills its own process mid-call).

    python tests/tools/mcp_servers/counter_server.py              # stdio
    python tests/tools/mcp_servers/counter_server.py --http PORT  # streamable HTTP at http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("counter")
_count = 0


@server.tool()
def increment(by: int = 1) -> str:
    """Add `by` to this connection's counter and return the new value."""
    global _count
    _count += by
    return f"count={_count}"


@server.tool()
def fail(reason: str, code: int | None = None) -> str:
    """Always fails with `reason` (a ToolError: the SDK reports its message to the client with isError).

    `code` is optional: its schema is an `anyOf` with no `type`, which verl's own schema model rejects."""
    raise ToolError(f"refused: {reason}" + (f" (code {code})" if code is not None else ""))


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep `seconds`, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Kill this server process mid-call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


if __name__ == "__main__":
    refuse = os.environ.get("COUNTER_SERVER_REFUSE_IF_EXISTS")  # a server that stops starting, for the tests
    if refuse and os.path.exists(refuse):
        sys.exit(3)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # streamable HTTP on 127.0.0.1:PORT/mcp
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
