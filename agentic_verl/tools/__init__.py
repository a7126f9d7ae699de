"""verl BaseTool adapters (one tool per module), used through tool config YAMLs in the top-level tools/ folder.

- search.SearchTool: search a passage corpus through the /retrieve server (configs/tools/search_tool.yaml)
- config.check_tool_config: a tool YAML checked as verl's loader reads it, before a run
  (`python -m agentic_verl.tools.config FILE.yaml`)
"""
