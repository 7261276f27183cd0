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
