"""Workflows: self-contained programs built on Dominds pieces (e.g. the Tree-of-Thoughts MCP server)."""
