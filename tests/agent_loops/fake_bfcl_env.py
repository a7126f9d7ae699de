"""An in-process stand-in for `agentic_verl.bfcl_env.client.BfclEnvClient` (the interface of the BFCL environment
contract): sessions over a tiny file system (`ls`, `cd`, `touch`, `mv`), outputs in BFCL's form (JSON results,
"Error during execution: ..." for an unknown function or bad arguments), and a checker whose verdict the test sets.
It records every call, so tests can check what the loop and the reward asked of the environment."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

FUNCTIONS = [
    {"name": "ls", "description": "List the current directory.",
     "parameters": {"type": "dict", "properties": {}, "required": []}},
    {"name": "cd", "description": "Change into a folder of the current directory.",
     "parameters": {"type": "dict", "properties": {"folder": {"type": "string"}}, "required": ["folder"]}},
    {"name": "touch", "description": "Create an empty file in the current directory.",
     "parameters": {"type": "dict", "properties": {"file_name": {"type": "string"}}, "required": ["file_name"]}},
    {"name": "mv", "description": "Rename a file of the current directory.",
     "parameters": {"type": "dict", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
                    "required": ["source", "destination"]}},
]
INITIAL_CONFIG = {"FakeFileSystem": {"root": {"docs": {"notes.txt": ""}, "readme.md": ""}}}
CLASSES = ["FakeFileSystem"]


class FakeEnvError(RuntimeError):
    """Stands for BfclEnvError (4xx/5xx/transport)."""


class FakeBfclEnv:
    def __init__(self, *, verdict: dict | None = None, fail_execute_at: int | None = None,
                 check_raises: Exception | None = None):
        self.verdict = verdict or {"valid": True, "error_type": None, "per_turn": [], "details": {}}
        self.fail_execute_at = fail_execute_at  # the n-th execute call (0-based) raises FakeEnvError
        self.check_raises = check_raises
        self.created: list[dict] = []
        self.executed: list[tuple[str, list[dict]]] = []
        self.closed: list[str] = []
        self.checks: list[dict] = []
        self.sessions: dict[str, dict] = {}

    # -- the client interface --------------------------------------------------------------------
    async def create_session(self, *, initial_config: dict, involved_classes: list[str],
                             long_context: bool = False) -> str:
        await asyncio.sleep(0)
        session_id = f"session-{len(self.created)}"
        self.created.append({"initial_config": initial_config, "involved_classes": involved_classes,
                             "long_context": long_context})
        root = copy.deepcopy(initial_config["FakeFileSystem"]["root"])
        self.sessions[session_id] = {"root": root, "cwd": []}
        return session_id

    async def execute(self, session_id: str, calls: list[dict]) -> list[str]:
        await asyncio.sleep(0)
        if self.fail_execute_at is not None and len(self.executed) == self.fail_execute_at:
            raise FakeEnvError("500 from the environment server: simulator crashed")
        if session_id not in self.sessions:
            raise FakeEnvError(f"404: unknown session {session_id}")
        self.executed.append((session_id, json.loads(json.dumps(calls))))
        return [self._run(self.sessions[session_id], call["name"], call["arguments"]) for call in calls]

    async def state(self, session_id: str) -> dict:
        return copy.deepcopy(self.sessions[session_id])

    async def close(self, session_id: str) -> None:
        await asyncio.sleep(0)
        if session_id not in self.sessions:
            raise FakeEnvError(f"404: unknown session {session_id}")
        del self.sessions[session_id]
        self.closed.append(session_id)

    async def check(self, *, entry: dict, model_calls: list) -> dict:
        await asyncio.sleep(0)
        self.checks.append({"entry": entry, "model_calls": model_calls})
        if self.check_raises is not None:
            raise self.check_raises
        return copy.deepcopy(self.verdict)

    # -- the simulator ---------------------------------------------------------------------------
    @staticmethod
    def _run(session: dict, name: str, arguments: dict[str, Any]) -> str:
        folder = session["root"]
        for part in session["cwd"]:
            folder = folder[part]
        try:
            if name == "ls":
                return json.dumps({"current_directory_content": sorted(folder)})
            if name == "cd":
                if not isinstance(folder.get(arguments["folder"]), dict):
                    return json.dumps({"error": f"cd: {arguments['folder']}: No such directory"})
                session["cwd"].append(arguments["folder"])
                return json.dumps({"current_working_directory": arguments["folder"]})
            if name == "touch":
                folder[arguments["file_name"]] = ""
                return "None"
            if name == "mv":
                folder[arguments["destination"]] = folder.pop(arguments["source"])
                return json.dumps({"result": f"{arguments['source']} moved to {arguments['destination']}"})
        except KeyError as exc:
            return f"Error during execution: missing argument {exc}"
        return f"Error during execution: name '{name}' is not defined"
