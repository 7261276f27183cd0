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


def give_the_lead_the_fake_server(rtws: Rtws, **extra: Any) -> None:
    """In a served workspace (server_kit's team): mcp.yaml with the fake server over stdio, and the lead
    with its toolset (both read at the next generation)."""
    team = rtws.team_yaml.read_text()
    rtws.team_yaml.write_text(team.replace("gofor: [plans and delegates]}", "gofor: [plans and delegates], toolsets: [fake]}", 1))
    (rtws.minds_dir / "mcp.yaml").write_text("servers:\n" + stdio_server_yaml(timeout_s=60, **extra))


def call(message: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A scripted response: on ``message``, the lead calls ``tool``."""
    return {"agent": "lead", "message": message, "stream": [{"func_call": {"name": tool, "arguments": arguments or {}}}]}


def after_tool(contains: str, reply: str) -> dict[str, Any]:
    """A scripted response to a tool result containing ``contains``."""
    return {"agent": "lead", "role": "tool", "contains": contains, "response": reply}


class HttpCommand:
    """A `dominds …` command that serves MCP over HTTP (``--http --port 0``); URL and token from its output."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        import os
        import re

        self.proc = subprocess.Popen(
            [PYTHON, "-m", "dominds", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.token: str | None = None
        self.lines: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            if not line:
                raise AssertionError(f"exited early: {self.proc.wait()} {self.proc.stderr.read() if self.proc.stderr else ''}")
            self.lines.append(line)
            if match := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line):
                self.url = match.group(1)
            if match := re.search(r"token: (\S+)$", line.strip()):
                self.token = match.group(1)
            if "clients send" in line or "no token" in line or "$DOMINDS_MCP_TOKEN" in line:
                break
        wait_port(int(self.url.rsplit(":", 1)[1].split("/")[0]), self.proc)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()

    def __enter__(self) -> HttpCommand:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServeDaemon:
    """`dominds serve --port 0` on a workspace; ``http``/``token`` from the printed panel URL."""

    def __init__(self, ws: Path, env: dict[str, str] | None = None) -> None:
        import os
        import re

        self.proc = subprocess.Popen(
            [PYTHON, "-m", "dominds", "-C", str(ws), "serve", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            if not line:
                raise AssertionError(f"serve exited: {self.proc.wait()} {self.proc.stderr.read() if self.proc.stderr else ''}")
            if match := re.search(r"panel: http://127\.0\.0\.1:(\d+)/(?:\?auth=(\S+))?", line):
                self.http, self.token = f"http://127.0.0.1:{match.group(1)}", match.group(2)
                break
            assert time.monotonic() < deadline

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def get(self, path: str) -> Any:
        import json
        import urllib.request

        request = urllib.request.Request(self.http + path, headers=self.headers())
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            return json.loads(body) if response.headers.get_content_type() == "application/json" else body

    def post(self, path: str, body: dict[str, Any]) -> Any:
        import json
        import urllib.request

        data = json.dumps(body).encode()
        request = urllib.request.Request(
            self.http + path, data=data, headers={**self.headers(), "Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()

    def __enter__(self) -> ServeDaemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for(predicate: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)
