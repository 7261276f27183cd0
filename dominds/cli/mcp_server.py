"""Dominds as an MCP server (``dominds mcp``): an MCP client hands work to a running daemon's team.

Every tool goes through the daemon's JSON API, found the way every ``dominds`` command finds it
(``.dialogs/daemon.json`` plus the workspace lock, see ``dominds/cli/client.py``), with its token.
No daemon running → each tool answers with an error saying to start ``dominds serve``.

Tools: ``list_dialogs``, ``list_questions``, ``start_dialog``, ``tell``, ``answer_question``,
``read_answer`` (optionally waiting until the dialog settles: idle, waiting for a human, or failed).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from mcp.server import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from dominds import __version__
from dominds.cli.client import DaemonClient, find_daemon
from dominds.cli.common import CliError
from dominds.rtws import Rtws

INSTRUCTIONS = """\
Hand work to a team of Dominds agents running in a local workspace (`dominds serve` must be running).
start_dialog creates a dialog and sends your message; read_answer (with wait_seconds) returns the
team's latest answer and any question it asked you; answer a question with answer_question; send a
follow-up with tell. list_dialogs and list_questions show what is going on."""

_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
MAX_WAIT_S = 600


def _result(data: Any, is_error: bool = False) -> CallToolResult:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, indent=2)
    structured = data if isinstance(data, dict) else None
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured, is_error=is_error)


def _trim(node: dict[str, Any]) -> dict[str, Any]:
    keep = ("selfId", "rootId", "status", "agentId", "taskDocPath", "lastModified", "runState", "q4hCount")
    out = {k: node[k] for k in keep if k in node}
    subs = [_trim(s) for s in node.get("subdialogs", [])]
    if subs:
        out["subdialogs"] = subs
    return out


def latest_answer(show: dict[str, Any]) -> str | None:
    """The last saying of the dialog's current course (``GET /api/dialogs/<id>``'s events)."""
    sayings = [e.get("content", "") for e in show.get("events", []) if e.get("type") == "saying_finish_evt"]
    return sayings[-1] if sayings else None


_AT_REST = frozenset({"idle", "interrupted", "dead", "terminal", "error"})


def settled(show: dict[str, Any], tree_questions: list[dict[str, Any]], awaited_msg_id: str | None) -> bool:
    """Whether waiting longer is pointless: the message we sent was taken up, and the dialog is at rest,
    or it (or a dialog of its tree) waits for a human answer."""
    if awaited_msg_id is not None and not any(
        e.get("type") == "end_of_user_saying_evt" and e.get("msgId") == awaited_msg_id for e in show.get("events", [])
    ):
        return False
    if show.get("q4h") or tree_questions:
        return True
    state = show.get("runState") or {}
    return state.get("kind") in _AT_REST and not show.get("generating")


def build_server(rtws: Rtws) -> MCPServer:
    server = MCPServer("dominds", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    awaited: dict[str, str] = {}
    """dialog id → msgId of the last message this server sent it and has not seen taken up yet"""

    async def daemon_call(fn: Any) -> CallToolResult:
        info = find_daemon(rtws)
        if info is None:
            return _result(f"no Dominds daemon is running for {rtws.root}; start one with `dominds serve`", True)
        try:
            async with DaemonClient(info) as client:
                return _result(await fn(client))
        except CliError as exc:
            return _result(str(exc), True)

    async def list_dialogs(status: str = "run") -> CallToolResult:
        """Dialogs of the workspace (status: run, done, archive, or a comma list), newest first, with their
        subdialogs, run state and number of open questions."""
        return await daemon_call(
            lambda c: _list(c, status)
        )

    async def _list(client: DaemonClient, status: str) -> dict[str, Any]:
        data = await client.get("/api/dialogs", status=status)
        return {"dialogs": [_trim(n) for n in data.get("dialogs", [])]}

    async def list_questions() -> CallToolResult:
        """Questions the team asked a human (@human) and that wait for an answer (answer_question)."""

        async def run(client: DaemonClient) -> dict[str, Any]:
            data = await client.get("/api/q4h")
            keep = ("id", "selfId", "rootId", "agentId", "tellaskHead", "bodyContent", "askedAt")
            return {"questions": [{k: q.get(k) for k in keep} for q in data.get("questions", [])]}

        return await daemon_call(run)

    async def start_dialog(message: str, agent: str | None = None, taskdoc: str = "tasks/mcp.tsk") -> CallToolResult:
        """Start a dialog with a team member (default: the team's default responder) and send it `message`.
        `taskdoc` is the Taskdoc package (*.tsk) the dialog works on. Returns the dialog id."""

        async def run(client: DaemonClient) -> dict[str, Any]:
            body: dict[str, Any] = {"taskDocPath": taskdoc}
            if agent:
                body["agentId"] = agent
            created = await client.post("/api/dialogs", body)
            msg_id = f"mcp-{uuid.uuid4().hex[:12]}"
            await client.post(f"/api/dialogs/{created['selfId']}/messages", {"content": message, "msgId": msg_id})
            awaited[created["selfId"]] = msg_id
            return {"dialogId": created["selfId"], "agentId": created.get("agentId"), "msgId": msg_id}

        return await daemon_call(run)

    async def tell(dialog_id: str, message: str) -> CallToolResult:
        """Send a follow-up message to a dialog (its agent answers; read it with read_answer)."""

        async def run(client: DaemonClient) -> dict[str, Any]:
            msg_id = f"mcp-{uuid.uuid4().hex[:12]}"
            await client.post(f"/api/dialogs/{dialog_id}/messages", {"content": message, "msgId": msg_id})
            awaited[dialog_id] = msg_id
            return {"dialogId": dialog_id, "msgId": msg_id}

        return await daemon_call(run)

    async def answer_question(question_id: str, answer: str) -> CallToolResult:
        """Answer a question the team asked (ids from list_questions or read_answer); the dialog goes on."""

        async def run(client: DaemonClient) -> dict[str, Any]:
            msg_id = f"mcp-{uuid.uuid4().hex[:12]}"
            data = await client.post(f"/api/q4h/{question_id}/answer", {"content": answer, "msgId": msg_id})
            awaited[data["selfId"]] = msg_id
            return {"answered": question_id, "dialogId": data["selfId"], "rootId": data.get("rootId")}

        return await daemon_call(run)

    async def read_answer(dialog_id: str, wait_seconds: float = 0) -> CallToolResult:
        """The dialog's latest answer, its run state and the questions it waits on. With wait_seconds,
        first wait (up to 600 s) until the dialog settles: your last message to it taken up, and it is idle,
        failed, or it or a dialog of its tree waits for a human answer."""

        async def run(client: DaemonClient) -> dict[str, Any]:
            deadline = time.monotonic() + max(0.0, min(float(wait_seconds), MAX_WAIT_S))
            while True:
                show = await client.get(f"/api/dialogs/{dialog_id}")
                root_id = (show.get("dialog") or {}).get("rootId", dialog_id)
                questions = [q for q in (await client.get("/api/q4h")).get("questions", []) if q.get("rootId") == root_id]
                done = settled(show, questions, awaited.get(dialog_id))
                if done or time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0.25)
            if done:
                awaited.pop(dialog_id, None)
            keep = ("id", "selfId", "agentId", "tellaskHead", "bodyContent")
            return {
                "dialogId": dialog_id,
                "runState": show.get("runState"),
                "settled": done,
                "answer": latest_answer(show),
                "questions": [{k: q.get(k) for k in keep} for q in questions],
            }

        return await daemon_call(run)

    reads = {"list_dialogs", "list_questions", "read_answer"}
    for tool in (list_dialogs, list_questions, start_dialog, tell, answer_question, read_answer):
        server.add_tool(tool, name=tool.__name__, annotations=_READ if tool.__name__ in reads else _WRITE)
    return server
