"""The live connections to one MCP server in one process, shared by every `McpTool` entry that names that server.

Keys: one connection per trajectory (verl's AgentData, when the loop passes it), per instance_id (when it does
not), or one `shared` connection for stateless servers. Tools of one server share a trajectory's connection, so a
stateful server (a memory graph, a shell) sees one session whatever tool the model calls.

The cap: at most `max_connections` live connections per server and event loop (0 = no cap). N concurrent
trajectories would otherwise start N stdio servers; past the cap a caller waits for a slot (a trajectory that ended,
a crashed server) up to `wait_s`, then gets `McpCallError("too_many_connections")`. A slot is freed when the
connection's owner task ends (closed, crashed or never started), so no path leaks one.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from agentic_verl.tools.mcp_results import McpCallError
from agentic_verl.tools.mcp_session import McpConnection, McpServerSpec

__all__ = ["ServerConnections", "server_connections"]


class ServerConnections:
    def __init__(self, spec: McpServerSpec, max_connections: int, wait_s: float, connect_timeout_s: float):
        self.spec, self.max_connections = spec, max_connections
        self.wait_s, self.connect_timeout_s = wait_s, connect_timeout_s
        self._by_instance: dict[str, McpConnection] = {}
        self._by_trajectory: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._shared: McpConnection | None = None
        # one opening at a time per key (trajectories start their servers in parallel); weak values, so a lock
        # lives only while a call holds it; an asyncio primitive serves one loop, hence the loop in the keys
        self._locks: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._slots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loop -> Semaphore

    def live(self) -> int:
        """Connections open now (tests, metrics)."""
        conns = {id(c): c for c in (*self._by_instance.values(), *self._by_trajectory.values(), self._shared) if c}
        return sum(conn.alive for conn in conns.values())

    async def connection(self, shared: bool, instance_id: str, trajectory: Any) -> tuple[McpConnection, bool]:
        """(a live connection for this key, whether an earlier one of this key had died: a restart)."""
        loop = asyncio.get_running_loop()
        key = ("shared",) if shared else \
            ("trajectory", id(trajectory)) if trajectory is not None else ("instance", instance_id)
        lock = self._locks.get((id(loop), key))
        if lock is None:
            lock = self._locks[(id(loop), key)] = asyncio.Lock()
        async with lock:
            conn = self._current(shared, instance_id, trajectory)
            if conn is not None and conn.alive and conn.loop is loop:
                return conn, False
            restarted = conn is not None and conn.loop is loop  # another loop's connection: not a crash
            if conn is not None:
                await self._drop(conn)
            conn = await self._open(loop)
            self._remember(conn, shared, instance_id, trajectory)
            return conn, restarted

    async def release_instance(self, instance_id: str) -> None:
        conn = self._by_instance.pop(instance_id, None)
        if conn is not None:
            await conn.close()

    async def _open(self, loop) -> McpConnection:
        slots = None
        if self.max_connections:
            slots = self._slots.get(loop)
            if slots is None:
                slots = self._slots[loop] = asyncio.Semaphore(self.max_connections)
            try:
                await asyncio.wait_for(slots.acquire(), self.wait_s)
            except (asyncio.TimeoutError, TimeoutError) as exc:
                raise McpCallError("too_many_connections", f"Error: all {self.max_connections} connections to the "
                                   f"{self.spec.describe()} server stayed busy for {self.wait_s:g}s; "
                                   "try again later.") from exc
        try:
            return await McpConnection.open(self.spec, self.connect_timeout_s,
                                            on_end=slots.release if slots is not None else None)
        except Exception as exc:  # the owner task ended, so the slot is free again
            raise McpCallError("connect_failed", f"Error: the {self.spec.describe()} server could not be started: "
                                                 f"{_describe(exc)}") from exc

    def _current(self, shared: bool, instance_id: str, trajectory: Any) -> McpConnection | None:
        if shared:
            return self._shared
        if trajectory is not None:
            return self._by_trajectory.get(trajectory)
        return self._by_instance.get(instance_id)

    def _remember(self, conn: McpConnection, shared: bool, instance_id: str, trajectory: Any) -> None:
        if shared:
            self._shared = conn
        elif trajectory is not None:
            self._by_trajectory[trajectory] = conn
            weakref.finalize(trajectory, conn.close_soon)  # the trajectory's AgentData is freed: end its server
        else:
            self._by_instance[instance_id] = conn

    async def _drop(self, conn: McpConnection) -> None:
        """Forget a broken connection everywhere it is kept and close what is left of it."""
        if self._shared is conn:
            self._shared = None
        for store in (self._by_instance, self._by_trajectory):
            for key, value in list(store.items()):
                if value is conn:
                    del store[key]
        conn.dead = True
        if conn.loop is asyncio.get_running_loop():
            await conn.close()
        else:  # a connection of another, still running loop: its own loop closes it
            conn.close_soon()


def _describe(exc: BaseException) -> str:
    """The first real error inside the SDK's task-group wrapping (`ExceptionGroup: unhandled errors...` says nothing)."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # a (Base)ExceptionGroup
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


_POOLS: dict[tuple, ServerConnections] = {}
_POOLS_LOCK = threading.Lock()


def server_connections(spec: McpServerSpec, max_connections: int, wait_s: float,
                       connect_timeout_s: float) -> ServerConnections:
    """This process's connections to `spec` (one pool per server and settings, however many tool entries)."""
    key = (spec, max_connections, wait_s, connect_timeout_s)
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = ServerConnections(spec, max_connections, wait_s, connect_timeout_s)
        return _POOLS[key]
