"""`.minds/mcp.yaml`: mistakes become problems with line numbers (`dominds check`, `/api/problems`),
never a crash, and never at the cost of the other servers or the built-in toolsets; secrets stay out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_kit import FAKE_SERVER, PYTHON, after_tool, call, mcp_workspace, stdio_server_yaml

from dominds.driver.engine import Engine
from dominds.mcp.config import SecretRef, load_mcp_config
from dominds.rtws import Rtws
from dominds.store.course_records import FuncResultRecord

BAD = f"""\
servers:
  good:
    command: {PYTHON}
    args: [{FAKE_SERVER}, stdio]
    env: {{API_TOKEN: {{env: FAKE_MCP_SECRET}}}}
  "bad id!":
    command: x
  nocommand:
    transport: stdio
  weird:
    command: y
    timeout_s: -3
    colour: blue
  ws_read:
    command: z
"""


def _check(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dominds", "-C", str(ws), "check", "--json", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_config_mistakes_carry_line_numbers_and_good_servers_stay(tmp_path: Path) -> None:
    rtws = mcp_workspace(tmp_path / "ws", [], "", "ws_read")
    (rtws.minds_dir / "mcp.yaml").write_text(BAD)
    config = load_mcp_config(rtws, frozenset({"ws_read"}))
    assert sorted(config.servers) == ["good", "weird"]
    assert dict(config.servers["good"].env) == {"API_TOKEN": SecretRef("FAKE_MCP_SECRET")}
    found = {(p.line, p.severity): p.message for p in config.problems}
    assert "an id starts with a letter" in found[(6, "error")]
    assert "needs `command`" in found[(8, "error")]
    assert "timeout_s" in found[(12, "error")]
    assert "unknown key 'colour'" in found[(13, "warning")]
    assert "built-in toolset" in found[(14, "error")]


def test_bad_yaml_is_one_problem_and_the_builtin_toolsets_keep_working(tmp_path: Path) -> None:
    rtws = mcp_workspace(tmp_path / "ws", [], "", "ws_read")
    (rtws.minds_dir / "mcp.yaml").write_text("servers:\n  a: [unclosed\n")
    done = _check(rtws.root, "--no-connect")
    problems = json.loads(done.stdout)
    assert [(p["source"], p["line"], p["severity"]) for p in problems] == [(".minds/mcp.yaml", 3, "error")]
    assert "YAML syntax error" in problems[0]["message"]


def test_check_reports_unreachable_servers_and_name_clashes(tmp_path: Path) -> None:
    servers = stdio_server_yaml("one") + stdio_server_yaml("two") + "  gone:\n    command: /nonexistent/mcp-server\n"
    rtws = mcp_workspace(tmp_path / "ws", [], servers, "one, two, gone")
    problems = json.loads(_check(rtws.root).stdout)
    by_message = {p["message"]: p for p in problems}
    unreachable = [p for p in problems if "'gone': unreachable" in p["message"]]
    assert len(unreachable) == 1 and unreachable[0]["line"] == 10, problems
    clashes = [m for m in by_message if "another toolset has a tool of that name" in m]
    # every valid tool of the second server clashes with the first's (tests/mcp/fake_mcp_server.py; the count
    # was pinned at 8 and broke each time the fake server grew a tool for another test)
    clashed = {m.split("tool '")[1].split("'")[0] for m in clashes}
    assert clashed == {"echo", "remember", "recall", "crash", "hang", "nap", "getenv", "pid", "paint", "picture",
                       "paint_anywhere", "haiku", "haiku_anywhere", "sand"}, clashed
    assert all("'two'" in m for m in clashes), problems
    assert all(p["source"] == ".minds/mcp.yaml" for p in problems)
    invalid = [p for p in problems if "'dotted.name' left out" in p["message"]]
    assert [p["severity"] for p in invalid] == ["warning", "warning"]  # one per server
    bad_schema = [p for p in problems if "'bad_schema' left out: its input schema is invalid" in p["message"]]
    assert len(bad_schema) == 2  # one per server: a left-out tool takes no name


async def test_daemon_survives_an_unreachable_server_and_missing_secret(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    secret = "s3cr3t-value-never-logged"
    servers = (
        stdio_server_yaml("fake", env="{API_TOKEN: {env: FAKE_MCP_SECRET}}")
        + "  gone:\n    command: /nonexistent/mcp-server\n"
        + stdio_server_yaml("nosecret", env="{API_TOKEN: {env: FAKE_MCP_UNSET}}")
    )
    responses = [
        call("tell", "getenv", {"name": "API_TOKEN"}),
        after_tool("API_TOKEN=", "The token stays hidden."),
        call("say", "echo", {"text": "still here"}),
        after_tool("echo: still here", "Fine."),
        call("remind", "add_reminder", {"content": "x"}),
        after_tool("Reminder", "Noted."),
    ]
    monkeypatch.setenv("FAKE_MCP_SECRET", secret)
    monkeypatch.delenv("FAKE_MCP_UNSET", raising=False)
    rtws = mcp_workspace(tmp_path / "ws", responses, servers, "fake, gone, nosecret")
    events: list[dict] = []  # type: ignore[type-arg]
    engine = Engine(rtws)
    engine.pubchan.subscribe(events.append, wants_all=True)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        # deadlines, not figures: on the shared 2-core machine the fake server alone takes ~14 s to start
        engine.submit_user_message(root, "tell")
        await engine.wait_idle(timeout=90)
        engine.submit_user_message(root, "say")
        await engine.wait_idle(timeout=90)
        engine.submit_user_message(root, "remind")
        await engine.wait_idle(timeout=90)
        results = [r for r in root.files.read_course(1) if isinstance(r, FuncResultRecord)]
        assert [(r.name, r.is_error) for r in results] == [("getenv", False), ("echo", False), ("add_reminder", False)]
        assert results[0].content == "API_TOKEN=[secret]"  # the server said it; the record does not
        problems = engine.problems_payload()
        assert any("'gone': unreachable" in p["message"] for p in problems)
        assert any("FAKE_MCP_UNSET" in p["message"] for p in problems)
        api_tools = engine.config.mcp.describe()
        assert {s["name"]: s["state"] for s in api_tools} == {"fake": "running", "gone": "unreachable", "nosecret": "unreachable"}
    finally:
        await engine.close()
    on_disk = "".join(p.read_text(errors="replace") for p in Rtws(rtws.root).dialogs_dir.rglob("*") if p.is_file())
    assert secret not in on_disk and secret not in json.dumps(events) and secret not in json.dumps(problems)
