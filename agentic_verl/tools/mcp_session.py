"""One live connection to an MCP server (stdio subprocess or streamable HTTP), usable from any task of one loop.

The `mcp` SDK's transports and `ClientSession` are anyio context managers whose task groups must be entered and
exited in the same task; verl calls a tool's create/execute/release from different tasks of its agent-loop worker.
So each connection has an owner task (`_own`) that enters the transport and the session, signals ready, waits for
`close()` and exits them; callers only send requests through the session (safe from any task of the same loop).
When the server dies the owner task ends and `alive` turns false; the tool then starts a fresh connection.

`list_server_tools` is the synchronous one-shot listing the tool and `agentic-verl tools mcp-yaml` use: it runs in
its own thread and event loop, so it works whether or not the caller is inside a running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["McpConnection", "McpServerSpec", "list_server_tools"]


@dataclass(frozen=True)
class McpServerSpec:
    """Where the server is: `command` (argv of a stdio server) or `url` (streamable HTTP), exactly one."""

    command: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()  # extra environment of a stdio server
    cwd: str | None = None
    stderr: str = "inherit"  # a stdio server's stderr: "inherit" (the worker's log) or "discard"

    @classmethod
    def from_config(cls, server: Any) -> McpServerSpec:
        if not isinstance(server, dict):
            raise ValueError(f"mcp tool config 'server' must be a mapping with 'command' or 'url', got {server!r}")
        unknown = sorted(set(server) - {"command", "url", "env", "cwd", "stderr"})
        if unknown:
            raise ValueError(f"unknown mcp tool server key(s) {unknown}; known: command, url, env, cwd, stderr")
        command, url = server.get("command"), server.get("url")
        if (command is None) == (url is None):
            raise ValueError("mcp tool config 'server' needs exactly one of 'command' (stdio) or 'url' (HTTP)")
        if isinstance(command, str):
            command = [command]
        if command is not None and (not command or not all(isinstance(part, str) and part for part in command)):
            raise ValueError(f"mcp tool server 'command' must be a non-empty list of strings, got {command!r}")
        if server.get("stderr", "inherit") not in ("inherit", "discard"):
            raise ValueError("mcp tool server 'stderr' must be 'inherit' or 'discard'")
        spec = cls(command=tuple(command or ()), url=url, cwd=server.get("cwd"),
                   env=tuple(sorted((str(k), str(v)) for k, v in (server.get("env") or {}).items())),
                   stderr=server.get("stderr", "inherit"))
        if spec.command and shutil.which(spec.command[0]) is None:  # loud before a run, not at the first call
            raise FileNotFoundError(f"mcp tool server command {spec.command[0]!r} is not an executable on PATH")
        return spec

    def describe(self) -> str:
        return self.url or " ".join(self.command)


class McpConnection:
    """A started connection; `await McpConnection.open(spec)`, then `session`, `alive`, `close()`."""

    def __init__(self, spec: McpServerSpec):
        self.spec = spec
        self.session = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task | None = None
        self.dead = False  # set by a caller that saw the connection close (a crashed server)

    @classmethod
    async def open(cls, spec: McpServerSpec, timeout_s: float, on_end=None) -> McpConnection:
        """Start it; `on_end()` runs once when it ends however it ends (closed, crashed, never started)."""
        conn = cls(spec)
        conn.loop = asyncio.get_running_loop()
        conn._ready, conn._stop = conn.loop.create_future(), asyncio.Event()
        conn._owner = conn.loop.create_task(conn._own(), name=f"mcp-connection {spec.describe()}")
        if on_end is not None:  # a done callback runs even for a task cancelled before its first step
            conn._owner.add_done_callback(lambda _task: on_end())
        try:
            await asyncio.wait_for(asyncio.shield(conn._ready), timeout_s)
        except BaseException:
            await conn.close()
            raise
        return conn

    @property
    def alive(self) -> bool:
        return not self.dead and self._owner is not None and not self._owner.done() and self._ready.done() \
            and self._ready.exception() is None

    async def close(self) -> None:
        """Stop the owner task (it exits the session and transport, ending a stdio server) and wait for it."""
        if self._owner is None:
            return
        self._stop.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self._owner), 10.0)
        if not self._owner.done():  # a transport that does not exit: cancel inside its own task
            self._owner.cancel()

    def close_soon(self) -> None:
        """Close from outside the loop (a garbage-collection callback): schedule it thread-safely."""
        if self.loop is not None and self._stop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._stop.set)

    async def _own(self) -> None:
        from mcp.client.session import ClientSession

        try:
            with _stderr_sink(self.spec) as errlog:
                async with _transport(self.spec, errlog) as streams, ClientSession(*streams[:2]) as session:
                    await session.initialize()
                    self.session = session
                    self._ready.set_result(None)
                    await self._stop.wait()
        except BaseException as exc:  # a server that died, a failed start: the callers see it, never the loop
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(repr(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None


@contextlib.contextmanager
def _stderr_sink(spec: McpServerSpec):
    for stream in (sys.stderr, sys.__stderr__) if spec.stderr == "inherit" else ():
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.fileno()  # a captured stderr (pytest, some loggers) has none: the subprocess needs a real one
            yield stream
            return
    with open(os.devnull, "w") as sink:
        yield sink


def _transport(spec: McpServerSpec, errlog):
    if spec.url:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(spec.url)
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=spec.command[0], args=list(spec.command[1:]),
                                   env=dict(spec.env) or None, cwd=spec.cwd)
    return stdio_client(params, errlog=errlog)


async def _list_tools(spec: McpServerSpec, timeout_s: float) -> list:
    conn = await McpConnection.open(spec, timeout_s)
    try:
        tools, cursor = [], None
        while True:  # servers may paginate their listing
            from mcp.types import PaginatedRequestParams

            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await asyncio.wait_for(conn.session.list_tools(params=params), timeout_s)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
    finally:
        await conn.close()


def list_server_tools(spec: McpServerSpec, timeout_s: float = 30.0) -> list:
    """The server's tools (MCP `Tool` objects); raises ConnectionError naming the server when it cannot list them."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["tools"] = asyncio.run(_list_tools(spec, timeout_s))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="mcp-list-tools", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        exc = outcome["error"]
        raise ConnectionError(f"cannot list the tools of MCP server {spec.describe()!r}: "
                              f"{type(exc).__name__}: {exc}") from exc
    return outcome["tools"]
