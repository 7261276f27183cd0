"""Helpers for the MCP tests (no tests here): the fake MCP server as a real process, free ports,
and a scripted workspace whose members use MCP toolsets."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workspace_kit import write_workspace

from dominds.rtws import Rtws

FAKE_SERVER = Path(__file__).with_name("fake_mcp_server.py")
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[Any] | None = None, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"server exited early with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


@contextmanager
def fake_http_server(*, stateless: bool) -> Iterator[str]:
    """The fake server over streamable HTTP; yields its URL."""
    port = free_port()
    args = [PYTHON, str(FAKE_SERVER), "http", str(port), *(["--stateless"] if stateless else [])]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stdio_server_yaml(server_id: str = "fake", **extra: Any) -> str:
    lines = [f"  {server_id}:", "    transport: stdio", f"    command: {PYTHON}", f"    args: [{FAKE_SERVER}, stdio]"]
    lines += [f"    {key}: {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def http_server_yaml(server_id: str, url: str, **extra: Any) -> str:
    lines = [f"  {server_id}:", "    transport: streamable_http", f"    url: {url}"]
    lines += [f"    {key}: {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def mcp_workspace(root: Path, responses: list[dict[str, Any]], servers_yaml: str, toolsets: str) -> Rtws:
    """The standard scripted workspace whose ``lead`` has ``toolsets`` and whose mcp.yaml lists ``servers_yaml``."""
    rtws = write_workspace(root, responses)
    team = rtws.team_yaml.read_text().replace(
        "lead: {name: Lead, gofor: [plans and delegates]}", f"lead: {{name: Lead, gofor: [plans and delegates], toolsets: [{toolsets}]}}"
    )
    rtws.team_yaml.write_text(team)
    (rtws.minds_dir / "mcp.yaml").write_text("servers:\n" + servers_yaml)
    return rtws


def call(message: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A scripted response: on ``message``, the lead calls ``tool``."""
    return {"agent": "lead", "message": message, "stream": [{"func_call": {"name": tool, "arguments": arguments or {}}}]}


def after_tool(contains: str, reply: str) -> dict[str, Any]:
    """A scripted response to a tool result containing ``contains``."""
    return {"agent": "lead", "role": "tool", "contains": contains, "response": reply}
