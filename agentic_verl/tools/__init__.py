"""verl BaseTool adapters (one tool per module), used through tool config YAMLs (configs/tools/).

- search.SearchTool: search a passage corpus through the /retrieve server (configs/tools/search_tool.yaml)
- mcp.McpTool: one tool of any MCP server (stdio command or streamable HTTP url), its schema read from the server;
  connections per server in mcp_pool (capped, shared by a trajectory's tools), fail-fast after failed starts or
  crashes in a row (`agentic-verl tools mcp-yaml -- COMMAND...` writes the YAML entries; docs/mcp.md)
- code.PythonTool: run the model's Python in the sandbox of agentic_verl/eval/sandbox, opt-in
  (configs/tools/python_tool.yaml, docs/code_execution.md)
- config.check_tool_config: a tool YAML checked as verl's loader reads it, before a run
  (`python -m agentic_verl.tools.config FILE.yaml`); config.settings_from_config: a tool's settings from its YAML,
  unknown keys refused
"""
