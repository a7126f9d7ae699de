"""verl BaseTool adapters (one tool per module), used through tool config YAMLs in the top-level tools/ folder.

- search.SearchTool: search a passage corpus through the /retrieve server (tools/search_tool.yaml)
"""
