"""An MCP server that died while idle, seen from a dialog of an in-process engine (real server process).

The bug: a server that died between calls was not noticed: the next call failed with "went away …
may or may not have run" though it was never sent, and only the call after that restarted the server.
Now a call on a connection idle for a while pings first; a dead session is restarted and the call
runs on the new one.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from mcp_kit import after_tool, call, mcp_workspace, stdio_server_yaml
from test_mcp_toolsets import _engine, _results

from dominds.mcp import connection
from tests.processes import running


async def _run(engine, dialog, message: str) -> None:  # type: ignore[no-untyped-def]
    engine.submit_user_message(dialog, message)
    await engine.wait_idle(timeout=90)  # a server process starts in ~1 s, in 10 s on a loaded machine


async def test_a_server_dead_while_idle_is_restarted_and_the_call_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "IDLE_CHECK_S", 0.0)  # every call counts as after a quiet spell
    responses = [call("who", "pid"), after_tool("", "Here.")]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "who")
        first_pid = int(_results(root)[-1].content)
        os.kill(first_pid, signal.SIGKILL)
        while running(first_pid):
            await engine.wait_idle()  # yields to the loop; the kill lands within milliseconds
        await _run(engine, root, "who")
        again = _results(root)[-1]
        assert not again.is_error, again.content
        assert again.content.isdigit() and int(again.content) != first_pid
        assert engine.config.mcp.servers["fake"].restarts == 1
    finally:
        await engine.close()
