"""The Tools view's state of an unreachable MCP server says "unreachable" once.

The bug: `/api/tools` gave state `unreachable` and error `unreachable: …`, which the page joins as
"unreachable: unreachable: …"."""

from __future__ import annotations

from server_kit import ServeFactory


async def test_an_unreachable_servers_error_does_not_repeat_its_state(serve: ServeFactory) -> None:
    served = await serve()
    (served.engine.rtws.minds_dir / "mcp.yaml").write_text("servers:\n  files:\n    transport: stdio\n    command: /nonexistent/mcp-server\n")
    response = await served.client.get("/api/tools?connect=1", headers={"Authorization": f"Bearer {served.token}"})
    assert response.status == 200
    [files] = [t for t in (await response.json())["toolsets"] if t["name"] == "files"]
    assert files["state"] == "unreachable"
    assert files["error"] and not files["error"].startswith("unreachable"), files["error"]


async def test_the_shadow_members_are_in_no_toolsets_member_list(serve: ServeFactory) -> None:
    """The bug: the shadow member (pangu, who has every toolset but team management) showed in every
    toolset's members on the Tools view, though listings hide shadow members everywhere else."""
    served = await serve()
    response = await served.client.get("/api/tools", headers={"Authorization": f"Bearer {served.token}"})
    toolsets = (await response.json())["toolsets"]
    listed = {member for toolset in toolsets for member in toolset["members"]}
    assert not listed & {"fuxi", "pangu"}, listed
