"""Stop during a slow MCP call (issue 30): the call is cancelled with the protocol's cancellation.

Before: a Stop cancelled only the LLM stream, and a cancelled caller left its MCP call running on the
server (``Connection._guarded`` never cancelled the SDK request).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from deadlines import until
from mcp_kit import after_tool, call, mcp_workspace, stdio_server_yaml

from dominds.driver.engine import Engine
from dominds.store.course_records import FuncResultRecord, GenFinishRecord


async def test_stop_cancels_a_slow_mcp_call_on_the_server_and_resume_works(
    stray_task_errors: list[dict[str, Any]], tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    log.touch()
    responses = [
        call("nap", "nap", {"seconds": 60}),
        after_tool("INTERRUPTED (user_stop)", "The nap was stopped."),
    ]
    servers = stdio_server_yaml(timeout_s=600, env=f"{{FAKE_MCP_LOG: '{log}'}}")
    rtws = mcp_workspace(tmp_path / "ws", responses, servers, "fake")
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "nap")
        await until(lambda: "nap" in log.read_text().split("\n"), seconds=30.0)
        assert engine.stop(root)
        task = root.drive_task
        assert task is not None
        done, _ = await asyncio.wait({task}, timeout=10)
        assert task in done, "the drive waited for the 60 s MCP call"
        # the server heard the cancellation (notifications/cancelled) and stopped the tool
        await until(lambda: "nap cancelled" in log.read_text(), seconds=30.0)
        recs = root.files.read_course(root.latest.current_course)
        [result] = [r for r in recs if isinstance(r, FuncResultRecord)]
        assert result.interrupted and "may or may not have taken effect" in result.content
        assert [r.status for r in recs if isinstance(r, GenFinishRecord)] == ["interrupted"]
        assert root.latest.run_state.kind == "interrupted"
        assert engine.resume(root)
        await engine.wait_idle(timeout=30)
        assert root.latest.run_state.kind == "idle"
        words = [r.content for r in root.files.read_course(root.latest.current_course) if type(r).__name__ == "AgentWordsRecord"]
        assert words == ["The nap was stopped."]
    finally:
        await engine.close()
