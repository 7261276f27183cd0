"""Elicitation on every kind of session the client makes (real FastMCP servers over stdio and HTTP).

The bug: only stateful sessions could carry a server's question. A shared (stateless) session
negotiated the 2026-07-28 protocol, which forbids server-initiated requests, so a server asking with
``ctx.elicit`` failed its call with "no back-channel for server-initiated requests"; and a stateful
session forced the handshake-era protocol even on a server that keeps no sessions (or speaks only the
newest protocol), where a question sent as an ``InputRequiredResult`` (``Resolve(Elicit)``) could not
come either. Now a connection takes the handshake-era protocol where it has a back-channel (stdio; HTTP
with sessions and event streams) and the newest protocol otherwise (connection.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp_kit import (
    FAKE_SERVER,
    PYTHON,
    after_tool,
    call,
    fake_http_server,
    http_server_yaml,
    mcp_workspace,
    stdio_server_yaml,
)
from test_mcp_elicitation import _question
from test_mcp_toolsets import _engine, _results

from dominds.driver.engine import Engine
from dominds.mcp import elicit


async def _paint(engine: Engine, root: object, message: str, answer: str | None) -> str:
    """Send ``message`` (the lead then calls a painting tool), answer the question it raises (or let it
    time out when ``answer`` is None), and return the tool's result."""
    engine.submit_user_message(root, message)  # type: ignore[arg-type]
    question = await asyncio.wait_for(_question(engine), 120)
    assert question["kind"] == "elicitation" and "Which colour" in question["tellaskHead"]
    if answer is not None:
        engine.answer_question(question["id"], answer)
    await engine.wait_idle(timeout=120)
    assert engine.q4h_state() == [], "the question is gone once settled"
    [*_, result] = _results(root)
    return str(result.content)


async def test_a_shared_stdio_session_carries_ctx_elicit_and_an_unanswered_question_declines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common case that failed: a server asking with ``ctx.elicit`` on the shared stdio session."""
    responses = [
        call("paint it", "paint"),
        after_tool("painted blue, 2 coats", "Done."),
        after_tool("not painted (decline)", "Not painted."),
    ]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(timeout_s=60), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        assert await _paint(engine, root, "paint it", "colour: blue\ncoats: 2") == "painted blue, 2 coats"
        monkeypatch.setattr(elicit, "ELICIT_TIMEOUT_S", 1.0)  # nobody answers: declined, and the call goes on
        assert await _paint(engine, root, "paint it", None) == "not painted (decline)"
    finally:
        await engine.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_every_kind_of_session_carries_the_servers_question(tmp_path: Path) -> None:
    """HTTP with sessions (shared and per dialog, ``ctx.elicit``); HTTP without sessions and a stdio
    server of the newest protocol only (shared and per dialog, ``Resolve(Elicit)``, the only way such a
    server can ask)."""
    modern_only = [
        "    transport: stdio",
        f"    command: {PYTHON}",
        f"    args: [{FAKE_SERVER}, stdio, --modern-only]",
    ]
    kinds = {  # server id: (the tool that asks, mcp.yaml entry)
        "hs": ("paint", None),
        "hl": ("paint", "true"),
        "ss": ("paint_anywhere", None),
        "sl": ("paint_anywhere", "true"),
        "ms": ("paint_anywhere", None),
        "ml": ("paint_anywhere", "true"),
    }
    responses = [call(f"paint via {sid}", f"{sid}_{tool}") for sid, (tool, _) in kinds.items()]
    responses.append(after_tool("painted green, 1 coats", "Done."))
    with fake_http_server(stateless=False) as keeps_sessions, fake_http_server(stateless=True) as sessionless:
        yaml = ""
        for sid, (_tool, stateful) in kinds.items():
            extra = {"prefix": f"{sid}_", "timeout_s": 60, **({"stateful": stateful} if stateful else {})}
            if sid[0] == "h":
                yaml += http_server_yaml(sid, keeps_sessions, **extra)
            elif sid[0] == "s":
                yaml += http_server_yaml(sid, sessionless, **extra)
            else:
                yaml += f"  {sid}:\n" + "\n".join(modern_only) + "\n" + "".join(f"    {k}: {v}\n" for k, v in extra.items())
        rtws = mcp_workspace(tmp_path / "ws", responses, yaml, ", ".join(kinds))
        engine = await _engine(rtws)
        try:
            root = engine.create_dialog("lead", "tasks/t.tsk")
            got = {sid: await _paint(engine, root, f"paint via {sid}", "colour: green\ncoats: 1") for sid in kinds}
            assert got == dict.fromkeys(kinds, "painted green, 1 coats")
        finally:
            await engine.close()
