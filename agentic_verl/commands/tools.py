"""`agentic-verl tools`: helpers for verl tool config YAMLs.

    agentic-verl tools mcp-yaml -- npx -y @modelcontextprotocol/server-memory   # a stdio server's tools
    agentic-verl tools mcp-yaml --url http://127.0.0.1:8000/mcp --out tools.yaml  # a streamable HTTP server's

`mcp-yaml` starts (or connects to) the server, lists its tools and writes one `agentic_verl.tools.mcp.McpTool`
entry per tool for `actor_rollout_ref.rollout.multi_turn.tool_config_path`; without `tool_schema` (McpTool reads
the server's whole schema when verl builds it; `--with-schemas` writes it too, which verl's schema model trims).
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("tools", help="write and check tool config YAMLs (MCP servers as verl tools)")
    actions = parser.add_subparsers(dest="tools_command", metavar="ACTION", required=True)
    _add_mcp_yaml_arguments(actions.add_parser(
        "mcp-yaml", help="list an MCP server's tools and write their McpTool YAML entries"))


def _add_mcp_yaml_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="a streamable HTTP MCP server (instead of a command after --)")
    parser.add_argument("--out", help="write the YAML here (default: stdout)")
    parser.add_argument("--session", choices=("per_trajectory", "shared"), default="per_trajectory",
                        help="per_trajectory: a connection per trajectory (stateful servers); shared: one per worker")
    parser.add_argument("--timeout-s", type=float, default=30.0, help="per-call timeout written into each entry")
    parser.add_argument("--tool", action="append", help="only this tool (repeatable; default: every tool listed)")
    parser.add_argument("--with-schemas", action="store_true",
                        help="write each tool_schema too (to read or edit; verl validates a YAML schema with models "
                             "that keep only type/description/enum per parameter, so by default it is left out and "
                             "McpTool reads the whole schema from the server)")
    # not dest "command": the top-level parser keeps the subcommand's name there
    parser.add_argument("server_command", nargs="*", metavar="COMMAND", help="-- then the stdio server's command line")
    parser.set_defaults(handler=run_mcp_yaml)


def main_mcp_yaml(argv: list[str]) -> int:
    """`agentic-verl tools mcp-yaml ARGV`, callable without the top-level CLI."""
    parser = argparse.ArgumentParser(prog="agentic-verl tools mcp-yaml")
    _add_mcp_yaml_arguments(parser)
    return run_mcp_yaml(parser.parse_args(argv))


def run_mcp_yaml(args) -> int:
    import yaml

    from agentic_verl.tools.mcp_schema import tool_to_openai_schema
    from agentic_verl.tools.mcp_session import McpServerSpec, list_server_tools

    command = list(args.server_command)
    if command[:1] == ["--"]:  # argparse keeps a "--" that follows options in some versions
        command = command[1:]
    if bool(command) == bool(args.url):
        raise ValueError("tools mcp-yaml needs exactly one of --url URL or -- COMMAND...")
    server = {"url": args.url} if args.url else {"command": command}
    listed = list_server_tools(McpServerSpec.from_config(server), args.timeout_s)
    if args.tool:
        missing = sorted(set(args.tool) - {tool.name for tool in listed})
        if missing:
            raise ValueError(f"the server has no tool(s) {missing}; it lists {sorted(t.name for t in listed)}")
        listed = [tool for tool in listed if tool.name in args.tool]
    entries = []
    for tool in listed:
        entry = {"class_name": "agentic_verl.tools.mcp.McpTool",
                 "config": {"type": "native", "server": server, "tool": tool.name, "session": args.session,
                            "timeout_s": args.timeout_s}}
        if args.with_schemas:
            entry["tool_schema"] = tool_to_openai_schema(tool)
        entries.append(entry)
    text = yaml.safe_dump({"tools": entries}, sort_keys=False, allow_unicode=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {len(entries)} tool entries to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
