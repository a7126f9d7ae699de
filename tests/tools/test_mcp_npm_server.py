"""McpTool against a reference MCP server from npm, run with node over stdio: the official
@modelcontextprotocol/server-memory (a knowledge graph kept in a JSON file), pinned in the Makefile's `mcp-servers`
target, which `make test` runs (it installs into .mcp-servers/). Loaded through verl's `initialize_tools_from_config`
from a YAML without schemas; no skip: a missing server fails with the command that installs it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from pathlib import Path

import psutil
import pytest
import yaml
from verl.tools.tool_registry import initialize_tools_from_config

from agentic_verl.commands.tools import main_mcp_yaml

PACKAGE = "@modelcontextprotocol/server-memory"
VERSION = "2026.8.31"  # keep in step with the Makefile's mcp-servers target
ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / ".mcp-servers" / "node_modules" / PACKAGE / "dist" / "index.js"
INSTALL = f"make mcp-servers  (or: npm install --prefix .mcp-servers {PACKAGE}@{VERSION})"


class Trajectory:  # stands in for verl's AgentData
    pass


def _node_servers() -> int:
    """The memory servers this test process has running."""
    count = 0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a child that ended meanwhile
            count += str(ENTRY) in " ".join(child.cmdline())
    return count


@pytest.fixture(scope="module")
def memory_tools(tmp_path_factory):
    assert shutil.which("node"), f"node is not installed; `make test` installs it: {INSTALL}"
    assert ENTRY.is_file(), f"the npm MCP server {PACKAGE} is not installed in .mcp-servers/; run {INSTALL}"
    installed = json.loads((ENTRY.parents[1] / "package.json").read_text())["version"]
    assert installed == VERSION, f"{PACKAGE} {installed} is installed, the tests pin {VERSION}; run {INSTALL}"
    folder = tmp_path_factory.mktemp("memory")
    server = {"command": ["node", str(ENTRY)], "env": {"MEMORY_FILE_PATH": str(folder / "memory.jsonl")},
              "stderr": "discard"}
    entries = [{"class_name": "agentic_verl.tools.mcp.McpTool",
                "config": {"type": "native", "server": server, "tool": name, "timeout_s": 20}}
               for name in ("create_entities", "open_nodes", "create_relations")]
    path = folder / "tools.yaml"
    path.write_text(yaml.safe_dump({"tools": entries}))  # no tool_schema: read from the server
    return {tool.name: tool for tool in initialize_tools_from_config(str(path))}


@pytest.fixture(scope="module")
def memory_server(memory_tools) -> dict:
    return dict(memory_tools["create_entities"].settings.server)


def test_the_schemas_come_from_the_node_server(memory_tools):
    # dumped as verl's ToolAgentLoop does for the chat template: nested schemas kept (verl's models drop them)
    schema = memory_tools["create_entities"].tool_schema.model_dump(exclude_unset=True, exclude_none=True)
    entity = schema["function"]["parameters"]["properties"]["entities"]["items"]
    assert {"name", "entityType", "observations"} <= set(entity["properties"])
    assert entity["properties"]["observations"] == {"type": "array", "items": {"type": "string"},
                                                    "description": entity["properties"]["observations"]["description"]}
    assert schema["function"]["description"]


def test_two_tools_of_one_trajectory_share_its_server_session(memory_tools):
    create, open_nodes = memory_tools["create_entities"], memory_tools["open_nodes"]
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}

    async def run():
        trajectory = Trajectory()
        created = await create.execute("a", {"entities": [entity]}, agent_data=trajectory)
        opened = await open_nodes.execute("b", json.dumps({"names": ["Ada", "Nobody"]}), agent_data=trajectory)
        return created, opened, _node_servers()

    (created, _, created_metrics), (opened, _, opened_metrics), live = asyncio.run(run())
    assert created_metrics["status"] == opened_metrics["status"] == "ok"
    assert "Ada" in created.text
    graph = json.loads(opened.text)
    assert [node["name"] for node in graph["entities"]] == ["Ada"]
    assert graph["entities"][0]["observations"] == ["wrote the first program"]
    assert live == 1  # both tools spoke to one node process: the trajectory's (the graph file alone would not tell)


def test_arguments_the_server_rejects_come_back_as_its_text(memory_tools):
    async def run():
        return await memory_tools["create_relations"].execute("x", {"relations": "not a list"},
                                                              agent_data=Trajectory())

    response, reward, metrics = asyncio.run(run())
    assert metrics["status"] == "tool_error" and reward == 0.0
    assert "relations" in response.text  # the server's own validation message


def test_mcp_yaml_entries_for_the_node_server_load_with_whole_schemas(memory_server, tmp_path):
    out = tmp_path / "entries.yaml"
    assert main_mcp_yaml(["--out", str(out), "--", *memory_server["command"]]) == 0
    entries = yaml.safe_load(out.read_text())["tools"]
    assert {"create_entities", "open_nodes", "read_graph"} <= {entry["config"]["tool"] for entry in entries}
    assert not any("tool_schema" in entry for entry in entries)  # verl's YAML schema model would trim them
    loaded = {tool.name: tool for tool in initialize_tools_from_config(str(out))}
    dumped = loaded["create_relations"].tool_schema.model_dump(exclude_unset=True, exclude_none=True)
    assert set(dumped["function"]["parameters"]["properties"]["relations"]["items"]["properties"]) == \
        {"from", "to", "relationType"}
