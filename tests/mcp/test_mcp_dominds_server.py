"""`dominds mcp`: a real MCP client (the SDK's, over stdio and over streamable HTTP) hands work to a
running `dominds serve`: start a dialog, receive the team's question, answer it, read the result."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_kit import HttpCommand, ServeDaemon
from mcp_pipe import pipe_calls
from workspace_kit import write_idle_root, write_workspace

from dominds.cli.mcp_server import LIST_LIMIT
from dominds.rtws import Rtws
from dominds.store.dialog_store import DialogStore

RESPONSES = [
    {"agent": "lead", "message": "paint the shed", "response": "Let me ask.\n!?@human Which colour?\n!?Red or blue.\n"},
    {"agent": "lead", "message": "blue", "response": "Painting the shed blue."},
    {"agent": "coder", "message": "hello coder", "response": "Hello from coder."},
    {"agent": "lead", "message": "build the widget", "response": "Asking coder.\n!?@coder please build the widget\n"},
    {"agent": "coder", "contains": "please build the widget", "response": "One question.\n!?@human Which size?\n"},
    {"agent": "coder", "message": "large", "response": "Built a large widget."},
    {"agent": "lead", "contains": "Built a large widget", "response": "The widget is built, large."},
]


async def _tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


async def _conversation(client: Client) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"list_dialogs", "list_questions", "start_dialog", "tell", "answer_question", "read_answer"}
    started = await _tool(client, "start_dialog", message="paint the shed", taskdoc="tasks/t.tsk")
    dialog_id = started["dialogId"]
    asked = await _tool(client, "read_answer", dialog_id=dialog_id, wait_seconds=30)
    assert asked["settled"] and [q["tellaskHead"] for q in asked["questions"]] == ["@human Which colour?"]
    questions = (await _tool(client, "list_questions"))["questions"]
    assert [q["selfId"] for q in questions] == [dialog_id]
    await _tool(client, "answer_question", question_id=questions[0]["id"], answer="blue")
    done = await _tool(client, "read_answer", dialog_id=dialog_id, wait_seconds=30)
    assert done["answer"] == "Painting the shed blue." and done["questions"] == []
    assert done["runState"]["kind"] == "idle"
    listed = (await _tool(client, "list_dialogs"))["dialogs"]
    assert dialog_id in [d["selfId"] for d in listed]
    # tell: a follow-up to another member's dialog
    other = await _tool(client, "start_dialog", message="hello coder", agent="coder", taskdoc="tasks/t.tsk")
    reply = await _tool(client, "read_answer", dialog_id=other["dialogId"], wait_seconds=30)
    assert reply["answer"] == "Hello from coder."
    # a question asked deep in the tree (by the lead's teammate) reaches the client through the root
    root = (await _tool(client, "start_dialog", message="build the widget", taskdoc="tasks/t.tsk"))["dialogId"]
    waiting = await _tool(client, "read_answer", dialog_id=root, wait_seconds=30)
    assert waiting["settled"] and [q["tellaskHead"] for q in waiting["questions"]] == ["@human Which size?"]
    assert waiting["questions"][0]["selfId"] != root and waiting["questions"][0]["agentId"] == "coder"
    await _tool(client, "answer_question", question_id=waiting["questions"][0]["id"], answer="large")
    built = await _tool(client, "read_answer", dialog_id=root, wait_seconds=30)
    assert built["answer"] == "The widget is built, large." and built["questions"] == []


async def test_an_mcp_client_drives_a_dialog_over_stdio(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    with ServeDaemon(ws):
        params = StdioServerParameters(command=sys.executable, args=["-m", "dominds", "-C", str(ws), "mcp"])
        async with Client(params, read_timeout_seconds=60) as client:
            await _conversation(client)


async def test_list_dialogs_returns_the_most_recent_page_and_counts_the_others(tmp_path: Path) -> None:
    """The bug (a sibling of the panel's whole listing): ``list_dialogs`` asked the daemon for every tree,
    so on a big workspace an MCP client got megabytes (a minute of the daemon's work at 100,000
    dialogs) that no model can read. It now returns the ``LIST_LIMIT`` most recent trees and ``more``."""
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    store = DialogStore(Rtws(ws))
    made = [write_idle_root(store) for _ in range(LIST_LIMIT + 3)]
    with ServeDaemon(ws):
        params = StdioServerParameters(command=sys.executable, args=["-m", "dominds", "-C", str(ws), "mcp"])
        async with Client(params, read_timeout_seconds=60) as client:
            listed = await _tool(client, "list_dialogs")
    assert len(listed["dialogs"]) == LIST_LIMIT and listed["more"] == 3
    assert {d["selfId"] for d in listed["dialogs"]} <= set(made)


async def test_an_mcp_client_drives_a_dialog_over_http(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    with ServeDaemon(ws), HttpCommand(tmp_path, "-C", str(ws), "mcp", "--http", "--port", "0") as served:
        async with httpx2.AsyncClient(headers=served.headers(), timeout=60) as http:
            async with Client(streamable_http_client(served.url, http_client=http)) as client:
                await _conversation(client)
        async with httpx2.AsyncClient(timeout=30) as http:  # the same token rules as `dominds serve`
            assert (await http.post(served.url, json={})).status_code == 401


async def test_without_a_daemon_every_tool_says_to_start_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    params = StdioServerParameters(command=sys.executable, args=["-m", "dominds", "-C", str(ws), "mcp"])
    async with Client(params, read_timeout_seconds=60) as client:
        result = await client.call_tool("list_dialogs", {})
        assert result.is_error and "dominds serve" in result.content[0].text


def test_requests_in_flight_when_stdin_closes_are_all_answered(tmp_path: Path) -> None:
    """The bug (the sibling of ToT MCP's): a client that writes its calls and closes stdin (a pipe, a
    script) got the first answer or two; the SDK's stdio server cancelled the rest at end of input."""
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    replies = pipe_calls(["-C", str(ws), "mcp"], [("list_dialogs", {})] * 20, cwd=tmp_path)
    answers = [r["result"] for r in replies if r["id"] > 0]
    assert all(a["isError"] and "dominds serve" in a["content"][0]["text"] for a in answers), "no daemon: each says so"


async def test_argument_problems_are_named_in_plain_words_before_anything_runs(tmp_path: Path) -> None:
    """The bug (ToT MCP's, in `dominds mcp`): a missing argument came back as raw pydantic text ("1
    validation error for start_dialogArguments ... errors.pydantic.dev"), an unknown or misspelt
    argument (`dialogId` for `dialog_id`) was silently dropped, and an id was pasted into the daemon's
    URL whatever it held (spaces, `../`)."""
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    params = StdioServerParameters(command=sys.executable, args=["-m", "dominds", "-C", str(ws), "mcp"])
    async with Client(params, read_timeout_seconds=60) as client:

        async def refused(tool: str, **arguments: Any) -> str:
            result = await client.call_tool(tool, arguments)
            text: str = result.content[0].text
            assert result.is_error and "pydantic" not in text and "validation error" not in text, text
            assert "dominds serve" not in text, "refused before looking for the daemon"
            return text

        assert "`message` is missing" in await refused("start_dialog")
        assert "`dialogId` is not an argument of tell" in await refused("tell", dialog_id="d", dialogId="d", message="m")
        assert "dialog_id" in await refused("tell", dialogId="d", message="m")
        assert "`wait_seconds` must be a number" in await refused("read_answer", dialog_id="d", wait_seconds="soon")
        assert "`message` must be a string" in await refused("tell", dialog_id="d", message=5)
        assert "spaces" in await refused("tell", dialog_id=" d", message="m")
        assert "`question_id`" in await refused("answer_question", question_id="../dialogs", answer="a")
        assert "`status`" in await refused("list_dialogs", status="everything")
        fine = await client.call_tool("read_answer", {"dialog_id": "d", "wait_seconds": 1})
        assert fine.is_error and "dominds serve" in fine.content[0].text, "valid arguments reach the daemon check"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["tell"].input_schema["required"] == ["dialog_id", "message"]
        assert tools["tell"].input_schema["additionalProperties"] is False
