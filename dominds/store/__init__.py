"""Files and formats: atomic writes, course JSONL, typed state records, dialog layout.

Knows nothing about LLMs, sockets or scheduling.
"""
