"""A server's resources reach the model: `list_<id>_resources` and `read_<id>_resource` (real server process).

Before, only tools were offered; a server's resources were out of the agents' reach."""

from __future__ import annotations

from pathlib import Path

from mcp_kit import after_tool, call, mcp_workspace, stdio_server_yaml
from test_mcp_toolsets import _engine, _results


async def test_resources_are_listed_and_read_through_two_tools(tmp_path: Path) -> None:
    responses = [
        call("what is there", "list_fake_resources"),
        after_tool("fake://notes/greeting", "One note."),
        call("read it", "read_fake_resource", {"uri": "fake://notes/greeting"}),
        after_tool("hello from the fake server", "It says hello."),
    ]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        for message in ("what is there", "read it"):
            engine.submit_user_message(root, message)
            await engine.wait_idle(timeout=90)  # the server process starts in ~1 s, in 10 s on a loaded machine
        listed, read = _results(root)
        assert not listed.is_error and listed.content == "- fake://notes/greeting — greeting (text/plain): A short greeting"
        assert (read.content, read.is_error) == ("hello from the fake server", False)
    finally:
        await engine.close()
