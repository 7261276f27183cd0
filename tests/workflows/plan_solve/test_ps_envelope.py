"""Every envelope error of reference §2.3 gets its exact answer, and the connection keeps working."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from ps_kit import plan_json, planner, world

MISSING = "Unknown event type or missing session_id"


async def _raw(sock: Any, text: str) -> dict[str, Any]:
    await sock.ws.send_str(text)
    return await sock.recv()


async def test_protocol_errors_are_system_errors(serve: Any) -> None:
    served = await serve(world([1]))
    sock = await served.connect()
    bad_json = await _raw(sock, "{not json")
    assert bad_json["event"] == "system.error"
    assert (
        bad_json["content"]
        == "Invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    for text in ("[1, 2]", '{"session_id": "x"}', '{"event": 7}'):
        reply = await _raw(sock, text)
        assert (reply["event"], reply["content"]) == (
            "system.error",
            'Invalid message: expected a JSON object with a string "event" field',
        )
    unknown = await _raw(sock, json.dumps({"event": "user.dance", "session_id": "x"}))
    assert unknown["event"] == "system.error" and unknown["content"].startswith(
        f"{MISSING}: unknown event 'user.dance' (known: user.create_session,"
    )
    no_session = await _raw(sock, json.dumps({"event": "user.message", "content": "hi"}))
    assert (no_session["event"], no_session["content"]) == (
        "system.error",
        f"{MISSING}: user.message needs a session_id",
    )
    await sock.ws.send_bytes(b"\x00\x01")
    binary = await sock.recv()
    assert (binary["event"], binary["content"]) == (
        "system.error",
        "Binary frames are not supported; send JSON text",
    )
    assert "session_id" not in binary
    await sock.create_session()  # the connection survived all of it
    await sock.ws.send_str(json.dumps({"event": "user.message", "content": "x" * (1024 * 1024)}))
    assert (await sock.ws.receive(timeout=5)).type == aiohttp.WSMsgType.CLOSE and sock.ws.close_code == 1009


async def test_session_errors_are_agent_errors_with_exact_texts(serve: Any) -> None:
    served = await serve(world([1], extra=[planner(plan_json([1]), contains="slow", seconds=600.0)]))  # still planning while the errors are asked
    sock = await served.session()
    other = await served.session()

    async def error_for(event: str, session_id: str | None = None, **fields: Any) -> str:
        await sock.send(event, session_id=session_id or sock.session_id, **fields)
        reply = await sock.until("agent.error")
        assert reply["session_id"] == (session_id or sock.session_id) and reply["metadata"]["event"] == event
        return str(reply["content"])

    assert await error_for("user.message", "no-such-session", content="hi") == "Session not found"
    assert await error_for("user.message", other.session_id, content="hi") == "Session not found", (
        "another connection's session"
    )
    assert await error_for("user.message", content="   ") == "Message content cannot be empty"
    assert await error_for("user.message") == "Message content cannot be empty"
    assert await error_for("user.message", content={"text": "hi"}) == "Message content must be a text string"
    assert (
        await error_for("user.message", content="hi", metadata={"csv_path": "../secret.csv"})
        == "metadata.csv_path '../secret.csv' is outside the workspace"
    )
    assert await error_for("user.cancel_task") == "Missing task_id for cancel_task"
    assert await error_for("user.restart_task", content={}) == "Missing task_id for restart_task"
    assert (
        await error_for("user.cancel_task", content={"task_id": -2})
        == "Invalid task_id -2 for cancel_task: expected a positive integer"
    )
    assert (
        await error_for("user.response", content={"confirmed": True}) == "Missing step_id for user.response"
    )
    assert (
        await error_for("user.response", step_id="s1", content="yes")
        == 'user.response content must be an object such as {"confirmed": true}'
    )
    assert (
        await error_for("user.response", step_id="s1", content={"confirmed": True})
        == "No pending confirmation with step_id 's1'"
    )
    assert (
        await error_for("user.replan", content={"question": 3})
        == "Replan question must be a non-empty text string"
    )

    await sock.ask("a slow one")
    await sock.until("plan.start")
    assert (
        await error_for("user.message", content="second")
        == "Agent is currently running, please try again later"
    )
    await sock.send_in_session("user.cancel")
    assert (await sock.until("agent.interrupted"))["content"] == "Execution cancelled"
    await sock.send_in_session("user.close_session")
    await sock.until("agent.session_end")
    assert await error_for("user.cancel") == "Session is closed"
