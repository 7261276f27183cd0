"""An MCP client that is only a pipe: it writes initialize and its tool calls, closes stdin, reads what comes.

The SDK's client waits for each answer; a script piping requests does not, which is how the servers'
"requests in flight when stdin closes" bug showed (`dominds tot-mcp`, `dominds mcp`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def pipe_calls(args: list[str], calls: list[tuple[str, dict[str, Any]]], *, cwd: Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run ``python -m dominds *args``, send initialize then ``calls`` (ids 1..n), close stdin; the replies.

    Fails with the server's stderr when it does not exit in time."""
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    messages += [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(calls, 1)
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "dominds", *args],
        input="".join(json.dumps(m) + "\n" for m in messages).encode(),
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    replies = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    assert sorted(r["id"] for r in replies) == list(range(len(calls) + 1)), proc.stderr.decode()[-2000:]
    return replies
