"""Tree of Thoughts: a rule-checked, persisted investigation tree (issue 8).

``machine`` holds the pure state machine and its rules, ``sessions`` the session files and the six
operations over raw arguments, ``toolset`` the ``tot`` toolset for agents. The MCP server
(``dominds.workflows.tot_mcp``) serves the same operations to MCP clients.
"""
