"""`dominds mcp`'s `read_answer` waits, through the SDK's client over stdio: when it stops waiting, and
what the client hears while it waits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_kit import ServeDaemon
from workspace_kit import write_workspace

RESPONSES = [
    {"agent": "lead", "message": "paint the shed", "response": "Let me ask.\n!?@human Which colour?\n!?Red or blue.\n"},
    {"agent": "lead", "message": "blue", "response": "Painting the shed blue."},
    {"agent": "lead", "message": "count slowly", "response": "one two three four five six seven eight", "delay_ms": 700},
]


async def _tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def _stdio(ws: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "dominds", "-C", str(ws), "mcp"])


async def test_read_answer_after_tell_to_a_dialog_waiting_on_a_human_settles_on_the_question(tmp_path: Path) -> None:
    """The bug: `settled()` first waited for the told message to be taken up, which cannot happen before
    the human question is answered, so `read_answer` waited its whole `wait_seconds` (and a client's 60 s
    request timeout fired) although the dialog was waiting for the caller."""
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    with ServeDaemon(ws):
        async with Client(_stdio(ws), read_timeout_seconds=50) as client:
            dialog_id = (await _tool(client, "start_dialog", message="paint the shed", taskdoc="tasks/t.tsk"))["dialogId"]
            asked = await _tool(client, "read_answer", dialog_id=dialog_id, wait_seconds=30)
            assert asked["settled"] and len(asked["questions"]) == 1
            await _tool(client, "tell", dialog_id=dialog_id, message="are you there?")
            waiting = await _tool(client, "read_answer", dialog_id=dialog_id, wait_seconds=40)
            assert waiting["settled"], "it waits for the caller's answer: nothing more to wait for"
            assert [q["tellaskHead"] for q in waiting["questions"]] == ["@human Which colour?"]
            await _tool(client, "answer_question", question_id=waiting["questions"][0]["id"], answer="blue")
            done = await _tool(client, "read_answer", dialog_id=dialog_id, wait_seconds=30)
            assert done["settled"] and done["questions"] == []


async def test_a_long_read_answer_sends_progress_on_the_clients_token(tmp_path: Path) -> None:
    """The bug: a long `read_answer` wait was silent, so standard clients (both official SDKs give up
    at 60 s by default; the TypeScript one resets that clock on progress) timed out although the docs
    allow 600 s. Now the wait reports progress on the client's progress token."""
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    (ws / ".minds" / "scripted" / "test.yaml").write_text(
        (ws / ".minds" / "scripted" / "test.yaml").read_text() + "pace: {chunk_chars: 4}\n"
    )
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    with ServeDaemon(ws):
        async with Client(_stdio(ws), read_timeout_seconds=50) as client:
            dialog_id = (await _tool(client, "start_dialog", message="count slowly", taskdoc="tasks/t.tsk"))["dialogId"]
            result = await client.call_tool("read_answer", {"dialog_id": dialog_id, "wait_seconds": 40}, progress_callback=on_progress)
            data = json.loads(result.content[0].text)
            assert data["settled"] and data["answer"] == "one two three four five six seven eight"
            assert heard, "progress notifications while waiting"
            assert all(total == 40 for _, total, _ in heard)
            assert [p for p, _, _ in heard] == sorted(p for p, _, _ in heard), "progress only grows"
            assert any(message and "proceeding" in message for _, _, message in heard), heard
            # without a token, no notification goes out (and the call still answers)
            quiet = await _tool(client, "read_answer", dialog_id=dialog_id, wait_seconds=1)
            assert quiet["settled"]
