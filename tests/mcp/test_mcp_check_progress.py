"""`dominds check` announces each MCP server it starts, as it goes, on stderr.

Bug (issue 36, item 17): `check` started every MCP server of mcp.yaml (and asked every provider) for
20 s and more without printing anything until its report. Now each server is announced when its start
begins and when its tools are listed (or it failed), with the time it took; stdout keeps the report
(here `--json`, still one JSON document).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_kit import mcp_workspace, stdio_server_yaml


def test_check_prints_each_mcp_server_as_it_is_started_and_listed(tmp_path: Path) -> None:
    servers = stdio_server_yaml("one") + "  gone:\n    command: /nonexistent/mcp-server\n"
    rtws = mcp_workspace(tmp_path / "ws", [], servers, "one, gone")
    done = subprocess.run(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "check", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = done.stderr.splitlines()
    assert {"checking MCP server one …", "checking MCP server gone …"} <= set(lines), done.stderr
    listed = next(line for line in lines if line.startswith("MCP server one: "))
    assert listed.split(": ")[1].split()[0].isdigit() and "tool(s) (" in listed, listed
    assert any(line.startswith("MCP server gone: failed (") for line in lines), done.stderr
    assert lines.index("checking MCP server one …") < lines.index(listed), "announced before its result"
    assert any("'gone': unreachable" in p["message"] for p in json.loads(done.stdout)), "stdout is the JSON report"
