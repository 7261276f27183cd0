"""A broken `.minds/` file keeps the last good configuration running (issue 18, item 5).

The bug: one YAML typo in team.yaml dropped the whole team — the agent list went empty, Create still
worked and silently routed to a hidden member, existing dialogs failed with "not a member", and the only
signal was a hover-only "⚠ 2 problem(s)". Now the last version that loaded cleanly stays in use (across
restarts too), each problem is reported with its line, and no dialog goes to a member nobody named.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

from server_kit import RESPONSES, TEAM_YAML, ServeFactory

from dominds.driver.engine import Engine
from dominds.server import make_app

BROKEN_TEAM = TEAM_YAML.replace("members:\n", "members:\n  oops: [unclosed\n")


async def _json(served: Any, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    response = await served.client.request(method, path, json=body, headers=served.auth())
    return response.status, await response.json()


async def _wait_reply(served: Any, self_id: str, text: str) -> None:
    for _ in range(200):
        _, shown = await _json(served, "GET", f"/api/dialogs/{self_id}")
        if any(e["type"] == "saying_finish_evt" and e["content"] == text for e in shown["events"]):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no reply {text!r}")


async def test_a_team_yaml_typo_keeps_the_last_good_team(serve: ServeFactory, aiohttp_client: Any) -> None:
    served = await serve()
    rtws = served.engine.rtws
    _, team = await _json(served, "GET", "/api/team")
    assert [m["id"] for m in team["members"]] == ["lead", "coder", "tester"]
    status, created = await _json(served, "POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    assert status == 201 and created["agentId"] == "lead"

    rtws.team_yaml.write_text(BROKEN_TEAM)
    _, team = await _json(served, "GET", "/api/team")
    assert [m["id"] for m in team["members"]] == ["lead", "coder", "tester"], "the team did not vanish"
    _, problems = await _json(served, "GET", "/api/problems")
    team_problems = [p for p in problems["problems"] if p["source"] == ".minds/team.yaml"]
    fallback = next(p for p in team_problems if p["kind"] == "config_fallback")
    assert "last good version" in fallback["message"] and fallback["severity"] == "error"
    syntax = next(p for p in team_problems if "YAML syntax error" in p["message"])
    assert syntax["line"] == BROKEN_TEAM.splitlines().index("  oops: [unclosed") + 2, "the line is named"

    status, second = await _json(served, "POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    assert status == 201 and second["agentId"] == "lead", "not a hidden member"
    status, _ = await _json(served, "POST", f"/api/dialogs/{created['selfId']}/messages", {"content": "hello"})
    assert status == 202
    await _wait_reply(served, created["selfId"], "Hello **there**! <script>alert(1)</script>")

    # a restart on the broken file still runs the last good team
    await served.engine.close()
    engine = Engine(rtws)
    await engine.start()
    try:
        client = await aiohttp_client(make_app(engine, token=served.token))
        listed = await (await client.get("/api/team", headers=served.auth())).json()
        assert [m["id"] for m in listed["members"]] == ["lead", "coder", "tester"]
        problems = await (await client.get("/api/problems", headers=served.auth())).json()
        assert any(p["kind"] == "config_fallback" for p in problems["problems"])
    finally:
        await engine.close()

    # no last good version at all: nothing is routed by default, a named member still works
    shutil.rmtree(rtws.state_dir / "last-good")
    bare = Engine(rtws)
    await bare.start()
    try:
        client = await aiohttp_client(make_app(bare, token=served.token))
        listed = await (await client.get("/api/team", headers=served.auth())).json()
        assert listed["members"] == [], "only hidden members are left"
        refused = await client.post("/api/dialogs", json={"taskDocPath": "tasks/t.tsk"}, headers=served.auth())
        assert refused.status == 400 and "no default agent" in (await refused.json())["error"]
        problems = await (await client.get("/api/problems", headers=served.auth())).json()
        assert any("no earlier good version" in p["message"] for p in problems["problems"])
        named = await client.post(
            "/api/dialogs", json={"taskDocPath": "tasks/t.tsk", "agentId": "pangu"}, headers=served.auth()
        )
        assert named.status == 201, "a member the user names explicitly is fine"
    finally:
        await bare.close()


async def test_fixing_the_file_applies_it_and_llm_and_mcp_yaml_fall_back_too(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    rtws = served.engine.rtws
    mcp_yaml = rtws.minds_dir / "mcp.yaml"
    mcp_yaml.write_text("servers:\n  files:\n    transport: stdio\n    command: cat\n")
    config = served.engine.config.get()
    assert served.engine.config.mcp.toolset_names() == ["files"]
    assert not [p for p in config.problems if p.severity == "error"]

    mcp_yaml.write_text("servers:\n  files:\n    transport: stdio\n    command: cat\n  bad: [\n")
    rtws.llm_yaml.write_text(rtws.llm_yaml.read_text() + "  broken: {apiType\n")
    config = served.engine.config.get()
    assert served.engine.config.mcp.toolset_names() == ["files"], "the MCP servers stay"
    assert "scripted" in config.catalog.providers, "the providers stay"
    assert {p.source for p in config.problems if p.kind == "config_fallback"} == {".minds/mcp.yaml", ".minds/llm.yaml"}

    rtws.team_yaml.write_text(TEAM_YAML.replace("  tester:", "  reviewer:"))
    mcp_yaml.unlink()
    rtws.llm_yaml.write_text(rtws.llm_yaml.read_text().replace("  broken: {apiType\n", ""))
    config = served.engine.config.get()
    assert "reviewer" in config.team.members and "tester" not in config.team.members, "a clean edit applies"
    assert not [p for p in config.problems if p.kind == "config_fallback"]
    assert served.engine.config.mcp.toolset_names() == []
    assert "reviewer" in (rtws.state_dir / "last-good" / ".minds" / "team.yaml").read_text()
