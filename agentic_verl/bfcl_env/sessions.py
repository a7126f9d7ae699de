"""Sessions of bfcl-eval's multi-turn API simulators: one set of simulator instances per trajectory.

Runs in `.venv-bfcl` (imports bfcl-eval). bfcl-eval's own `execute_multi_turn_func_call` keeps its instances in
module globals keyed by model name and test id; sessions never go through it: each session instantiates its
classes itself, through bfcl-eval's class mapping (`CLASS_FILE_PATH_MAPPING`) and `_load_scenario(initial_config)`
exactly as that function does, so two trajectories of the same question share nothing.

A call is dispatched by name to a public method of one of the session's instances, with the call's arguments as
keyword arguments (the later class wins a name two classes share, as in bfcl-eval's method map); its result or
error is formatted as BFCL's inference shows it to the model (protocol.format_output / error_output).

Simulator code runs under `simulators.SIMULATOR_LOCK` and on private copies of bfcl-eval's module-level records
(`simulators.private_records`): a session's state is its own, whatever ran before it or beside it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict

from agentic_verl.bfcl_env.protocol import (
    Limits,
    RequestError,
    error_output,
    format_output,
    public_state,
    unknown_function_output,
)
from agentic_verl.bfcl_env.simulators import (
    SIMULATOR_LOCK,
    load_classes,
    new_instances,
    private_records,
    public_methods,
)

_FORGOTTEN_IDS = 65536  # how many closed/expired session ids are remembered, to say "expired" rather than "unknown"


class Session:
    def __init__(self, session_id: str, instances: dict, long_context: bool = False):
        self.id, self.instances, self.long_context = session_id, instances, long_context
        self.methods = {}
        for instance in instances.values():  # in involved_classes order: a later class wins a shared name
            self.methods.update(public_methods(instance))
        self.last_used = time.monotonic()
        self.calls = 0

    def execute(self, calls: list[tuple[str, dict]]) -> list[str]:
        """One output string per call; never raises for what the calls do (unknown name, bad arguments, a
        simulator exception: error outputs). A long-context session runs on fresh copies of the module records:
        what a method writes there (VehicleControlAPI's weather) reaches no other session. Only long-context
        methods touch those records (bfcl-eval reads them behind `if self.long_context`), and copying TradingBot's
        takes milliseconds, so other sessions skip the copy."""
        if not self.long_context:
            return self._execute(calls)
        with private_records(list(self.instances)):
            return self._execute(calls)

    def _execute(self, calls: list[tuple[str, dict]]) -> list[str]:
        outputs = []
        for name, arguments in calls:
            method = self.methods.get(name)
            if method is None:
                outputs.append(unknown_function_output(name))
                continue
            try:
                outputs.append(format_output(method(**arguments)))
            except Exception as exc:  # what the simulator raised is the model's observation, as in BFCL
                outputs.append(error_output(exc))
            self.calls += 1
        return outputs

    def state(self) -> dict:
        return {name: public_state(instance) for name, instance in self.instances.items()}


class SessionStore:
    """The server's sessions: create, execute, state, close; at most `limits.max_sessions` open, and a session idle
    for `limits.idle_timeout_s` is closed by `expire_idle()` (the server's sweeper thread calls it)."""

    def __init__(self, limits: Limits, classes: dict[str, type] | None = None):
        self.limits = limits
        self.classes = classes if classes is not None else load_classes()
        self._sessions: dict[str, Session] = {}
        self._forgotten: OrderedDict[str, str] = OrderedDict()  # closed/expired id -> why
        self._lock = threading.Lock()  # the two dicts above
        self.stats = {"created": 0, "closed": 0, "expired": 0, "calls_executed": 0, "executes": 0}

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, initial_config: dict, involved_classes: list[str], long_context: bool) -> str:
        if len(self._sessions) >= self.limits.max_sessions:
            self.expire_idle()  # the sweeper may not have run yet; idle sessions make room first
        with self._lock:
            if len(self._sessions) >= self.limits.max_sessions:
                raise RequestError(429, f"{len(self._sessions)} sessions are open, the server's limit "
                                        f"(--max-sessions {self.limits.max_sessions}); close finished sessions")
        with SIMULATOR_LOCK:
            try:
                instances = new_instances(self.classes, initial_config, involved_classes, long_context)
            except Exception as exc:  # a config the simulators cannot load is the request's fault
                raise RequestError(422, f"initial_config does not load into {involved_classes}: "
                                        f"{type(exc).__name__}: {exc}") from None
        session = Session(secrets.token_hex(16), instances, long_context)
        with self._lock:
            if len(self._sessions) >= self.limits.max_sessions:  # others were created meanwhile
                raise RequestError(429, f"the server's limit of {self.limits.max_sessions} sessions is reached")
            self._sessions[session.id] = session
            self.stats["created"] += 1
        return session.id

    def get(self, session_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                why = self._forgotten.get(session_id)
                raise RequestError(404, f"session {session_id[:64]!r} was {why}" if why else
                                   f"unknown session {session_id[:64]!r}")
            session.last_used = time.monotonic()
            return session

    def execute(self, session_id: str, calls: list[tuple[str, dict]]) -> list[str]:
        session = self.get(session_id)
        with SIMULATOR_LOCK:
            before = session.calls
            outputs = session.execute(calls)
            self.stats["calls_executed"] += session.calls - before
            self.stats["executes"] += 1
        session.last_used = time.monotonic()
        return outputs

    def state(self, session_id: str) -> dict:
        session = self.get(session_id)
        with SIMULATOR_LOCK:
            return session.state()

    def close(self, session_id: str) -> None:
        with self._lock:
            if self._sessions.pop(session_id, None) is None:
                why = self._forgotten.get(session_id)
                raise RequestError(404, f"session {session_id[:64]!r} was {why}" if why else
                                   f"unknown session {session_id[:64]!r}")
            self._forget(session_id, "closed")
            self.stats["closed"] += 1

    def expire_idle(self, now: float | None = None) -> int:
        """Close the sessions idle for longer than the limit; returns how many."""
        deadline = (time.monotonic() if now is None else now) - self.limits.idle_timeout_s
        with self._lock:
            idle = [sid for sid, session in self._sessions.items() if session.last_used < deadline]
            for sid in idle:
                del self._sessions[sid]
                self._forget(sid, f"closed after {self.limits.idle_timeout_s:g} s idle (--idle-timeout-s)")
            self.stats["expired"] += len(idle)
        return len(idle)

    def _forget(self, session_id: str, why: str) -> None:
        self._forgotten[session_id] = why
        while len(self._forgotten) > _FORGOTTEN_IDS:
            self._forgotten.popitem(last=False)
