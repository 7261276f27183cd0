"""An MCP server's elicitation becomes a question for the human on the calling dialog (a real FastMCP
server process that elicits, the SDK's client in an in-process engine, the answer over the daemon's API).

Before, Dominds declared no elicitation capability: a server that asked the user during a call got
nothing to ask. Now the request is a Q4H on the dialog whose call it is; its answer (or decline) goes
back to the server and the call goes on; nothing is queued into the dialog.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp_kit import after_tool, call, mcp_workspace, stdio_server_yaml
from test_mcp_toolsets import _engine, _results

from dominds.driver.engine import Engine

RESPONSES = [
    call("paint it", "paint"),
    after_tool("painted blue, 2 coats", "Done: blue."),
    after_tool("not painted (decline)", "Not painted."),
]


async def _question(engine: Engine) -> dict[str, Any]:
    """The question the server's request became, once asked (the call waits on it meanwhile)."""
    asked = asyncio.Event()
    sub = engine.pubchan.subscribe(lambda e: asked.set() if e["type"] == "new_q4h_asked" else None, wants_all=True)
    try:
        if not engine.q4h_state():
            await asked.wait()
    finally:
        engine.pubchan.unsubscribe(sub)
    [question] = engine.q4h_state()
    return question


async def test_an_elicitation_is_a_question_whose_answer_goes_back_to_the_server(tmp_path: Path) -> None:
    rtws = mcp_workspace(tmp_path / "ws", RESPONSES, stdio_server_yaml(timeout_s=60, stateful="true"), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "paint it")
        question = await asyncio.wait_for(_question(engine), 90)
        assert question["kind"] == "elicitation" and question["selfId"] == root.self_id
        assert question["tellaskHead"] == "@human [MCP fake] Which colour for the shed?"
        assert "`colour` (string)" in question["bodyContent"] and "`coats` (integer)" in question["bodyContent"]
        engine.answer_question(question["id"], "colour: blue\ncoats: 2")
        await engine.wait_idle(timeout=60)
        [result] = _results(root)
        assert (result.content, result.is_error) == ("painted blue, 2 coats", False)
        assert engine.q4h_state() == [] and not root.queue, "answered, and nothing queued into the dialog"
        # a decline goes back as a decline
        engine.submit_user_message(root, "paint it")
        declined = await asyncio.wait_for(_question(engine), 90)
        engine.answer_question(declined["id"], "decline")
        await engine.wait_idle(timeout=60)
        assert _results(root)[-1].content == "not painted (decline)"
    finally:
        await engine.close()


async def test_a_server_that_dies_while_asking_takes_its_question_away(tmp_path: Path) -> None:
    """Crash → the call fails as any crash does, and the question no longer waits for anyone."""
    import os
    import signal

    responses = [call("paint it", "paint"), after_tool("went away", "It crashed."), call("who", "pid"), after_tool("", "Here.")]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(timeout_s=60, stateful="true"), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "who")
        await engine.wait_idle(timeout=90)
        pid = int(_results(root)[-1].content)
        engine.submit_user_message(root, "paint it")
        await asyncio.wait_for(_question(engine), 90)
        os.kill(pid, signal.SIGKILL)
        await engine.wait_idle(timeout=60)
        assert _results(root)[-1].is_error and "went away" in _results(root)[-1].content
        assert engine.q4h_state() == [], "the question went with the request"
    finally:
        await engine.close()
