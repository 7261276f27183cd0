"""A scripted agent uses MCP servers through a real `dominds serve`: our `dominds tot-mcp` over stdio and
over HTTP (token from an `{env: NAME}` secret), and a server returning an image, which the daemon
serves as an artifact behind its token. `/api/tools` lists every toolset with its source and state."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mcp_kit import (
    PYTHON,
    HttpCommand,
    ServeDaemon,
    after_tool,
    call,
    mcp_workspace,
    stdio_server_yaml,
    wait_for,
)


def _func_results(ws: Path, root_id: str) -> list[dict[str, Any]]:
    course = ws / ".dialogs" / "run" / root_id / "course-001.jsonl"
    if not course.exists():
        return []
    records = [json.loads(line) for line in course.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("type") == "func_result_record"]


def test_scripted_agent_uses_tot_mcp_over_stdio_and_http_and_an_image_server(tmp_path: Path) -> None:
    secret = "tot-http-token-0123456789"
    ws = tmp_path / "ws"
    responses = [
        call("stdio tot", "m_tot_start", {"query": "stdio question", "minRoots": 2}),
        after_tool("stdio question", "Started over stdio."),
        call("http tot", "h_tot_start", {"query": "http question", "minRoots": 2}),
        after_tool("http question", "Started over HTTP."),
        call("draw", "picture"),
        after_tool("a red dot", "Drawn."),
    ]
    with HttpCommand(tmp_path, "tot-mcp", "--http", "--port", "0", "--sessions-dir", str(tmp_path / "tot-http"),
                     env={"DOMINDS_MCP_TOKEN": secret}) as tot_http:  # fmt: skip
        assert secret not in "".join(tot_http.lines)  # a token from the environment is not printed
        servers = (
            f"  totmcp:\n    command: {PYTHON}\n    args: [-m, dominds, tot-mcp]\n    prefix: m_\n"
            f"  tothttp:\n    url: {tot_http.url}\n    headers: {{Authorization: {{env: TOT_TOKEN, prefix: 'Bearer '}}}}\n"
            "    prefix: h_\n" + stdio_server_yaml("fake", tools="{whitelist: [picture, echo]}")
        )
        mcp_workspace(ws, responses, servers, "ws_read, totmcp, tothttp, fake")
        tot_http.token = secret
        with ServeDaemon(ws, env={"TOT_TOKEN": secret}) as daemon:
            root = daemon.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})["rootId"]
            for n, message in enumerate(["stdio tot", "http tot", "draw"], 1):
                daemon.post(f"/api/dialogs/{root}/messages", {"content": message})
                wait_for(lambda n=n: len(_func_results(ws, root)) >= n)
            results = _func_results(ws, root)
            assert [(r["name"], r.get("is_error", False)) for r in results] == [
                ("m_tot_start", False), ("h_tot_start", False), ("picture", False),
            ]  # fmt: skip
            assert json.loads(results[0]["content"])["sessionId"] and "stdio question" in results[0]["content"]
            http_session = json.loads(results[1]["content"])["sessionId"]
            assert (tmp_path / "tot-http" / f"{http_session}.json").is_file()
            # the stdio tot-mcp was started in the workspace, so it shares the team's session directory
            stdio_session = json.loads(results[0]["content"])["sessionId"]
            assert (ws / ".dominds" / "tot" / f"{stdio_session}.json").is_file()

            artifact = next(line for line in results[2]["content"].splitlines() if "artifact" in line)
            url = artifact[artifact.index("/api/dialogs/") :].rstrip("]")
            assert daemon.get(url).startswith(b"\x89PNG")
            try:
                urllib.request.urlopen(daemon.http + url, timeout=10)
                raise AssertionError("an artifact was served without the token")
            except urllib.error.HTTPError as exc:
                assert exc.code == 401

            toolsets = {t["name"]: t for t in daemon.get("/api/tools")["toolsets"]}
            assert toolsets["ws_read"]["source"] == "built-in" and "lead" in toolsets["ws_read"]["members"]
            for name in ("totmcp", "tothttp", "fake"):
                assert toolsets[name]["source"] == f"mcp:{name}" and toolsets[name]["state"] == "running"
            assert sorted(t["name"] for t in toolsets["fake"]["tools"]) == ["echo", "picture"]
            assert "h_tot_end" in {t["name"] for t in toolsets["tothttp"]["tools"]}
            assert daemon.get("/api/problems")["problems"] == []
        on_disk = "".join(p.read_text(errors="replace") for p in (ws / ".dialogs").rglob("*") if p.is_file())
        assert secret not in on_disk


def test_an_mcp_call_cut_by_a_daemon_crash_is_reported_and_never_re_run(tmp_path: Path) -> None:
    import os
    import signal

    ws = tmp_path / "ws"
    log = tmp_path / "hang.log"
    responses = [
        call("wait", "hang"),
        after_tool("may or may not have taken effect", "The call was cut short; I will not assume it ran."),
    ]
    mcp_workspace(ws, responses, stdio_server_yaml(timeout_s=600, env=f"{{FAKE_MCP_LOG: '{log}'}}"), "fake")
    with ServeDaemon(ws) as daemon:
        root = daemon.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})["rootId"]
        daemon.post(f"/api/dialogs/{root}/messages", {"content": "wait"})
        wait_for(lambda: log.exists() and log.read_text() == "hang\n")
        os.kill(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(10)
    with ServeDaemon(ws):
        results = wait_for(lambda: _func_results(ws, root))
        assert results[0]["name"] == "hang" and "may or may not have taken effect" in results[0]["content"]
        course = (ws / ".dialogs" / "run" / root / "course-001.jsonl").read_text()
        wait_for(lambda: "I will not assume it ran" in (ws / ".dialogs" / "run" / root / "course-001.jsonl").read_text())
        assert "func_call_record" in course
    assert log.read_text() == "hang\n"  # recorded once, never run again
