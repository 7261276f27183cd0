"""`dominds tot-mcp`: the Tree-of-Thoughts tools served over MCP (stdio), on the ``dominds.tools.tot`` machine."""
