"""Dominds for Python: a local-first dialog runtime daemon for teams of LLM agents."""

__version__ = "0.1.0"
