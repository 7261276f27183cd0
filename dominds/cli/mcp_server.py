"""Dominds as an MCP server (``dominds mcp``): an MCP client hands work to a running daemon's team.

Every tool goes through the daemon's JSON API, found the way every ``dominds`` command finds it
(``.dialogs/daemon.json`` plus the workspace lock, see ``dominds/cli/client.py``), with its token.
No daemon running → each tool answers with an error saying to start ``dominds serve``.

Tools: ``list_dialogs``, ``list_questions``, ``start_dialog``, ``tell``, ``answer_question``,
``read_answer`` (optionally waiting until the dialog settles: idle, waiting for a human, or failed).

Why the SDK's low-level ``Server`` and not ``MCPServer``: ``MCPServer`` validates arguments against the
handler's signature, so a missing one came back as raw pydantic text and an unknown or misspelt one
(``dialogId``) was dropped without a word. Here ``parse_arguments`` answers each problem in plain words,
before the daemon is looked for, and ids are checked before they go into the daemon's URLs.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    TextContent,
    Tool,
    ToolAnnotations,
)

from dominds import __version__
from dominds.cli.client import DaemonClient, find_daemon
from dominds.cli.common import CliError
from dominds.rtws import DIALOG_STATUSES, Rtws

INSTRUCTIONS = """\
Hand work to a team of Dominds agents running in a local workspace (`dominds serve` must be running).
start_dialog creates a dialog and sends your message; read_answer (with wait_seconds) returns the
team's latest answer and any question it asked you; answer a question with answer_question; send a
follow-up with tell. list_dialogs and list_questions show what is going on."""

_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
MAX_WAIT_S = 600
PROGRESS_EVERY_S = 5.0
"""While ``read_answer`` waits, a progress notification at least this often (and on each change of run
state) when the client gave a progress token: clients that reset their request timeout on progress
(the TypeScript SDK's ``resetTimeoutOnProgress``) then wait the whole ``wait_seconds``."""

Report = Callable[[float, float | None, str | None], Awaitable[None]]


async def _no_report(progress: float, total: float | None, message: str | None) -> None:
    return None


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


def taken_up(show: dict[str, Any], msg_id: str) -> bool:
    return any(e.get("type") == "end_of_user_saying_evt" and e.get("msgId") == msg_id for e in show.get("events", []))


def settled(show: dict[str, Any], tree_questions: list[dict[str, Any]], awaited_msg_id: str | None) -> bool:
    """Whether waiting longer is pointless: the dialog (or a dialog of its tree) waits for a human answer,
    or the message we sent was taken up and the dialog is at rest.

    A question comes first: a message told to a dialog that waits on a question is not taken up before
    the question is answered, so waiting for it would wait out the whole ``wait_seconds``."""
    if show.get("q4h") or tree_questions:
        return True
    if awaited_msg_id is not None and not taken_up(show, awaited_msg_id):
        return False
    state = show.get("runState") or {}
    return state.get("kind") in _AT_REST and not show.get("generating")


@dataclass(frozen=True)
class Arg:
    """One argument of a tool: a plain ``string``, an ``id`` (goes into a daemon URL), a ``number`` or
    a dialog ``status`` list; ``required`` unless it has a ``default``."""

    name: str
    kind: Literal["string", "id", "number", "status"]
    description: str
    required: bool = True
    default: Any = None


@dataclass(frozen=True)
class ToolSpec:
    description: str
    args: tuple[Arg, ...]
    read_only: bool


LIST_LIMIT = 50
"""Trees ``list_dialogs`` returns: a whole listing of 100,000 dialogs is megabytes no model can read (and
a minute of the daemon's work)."""
_DIALOG_ID = Arg("dialog_id", "id", "a dialog id (from start_dialog or list_dialogs)")
TOOL_SPECS: dict[str, ToolSpec] = {
    "list_dialogs": ToolSpec(
        f"The {LIST_LIMIT} most recently active dialogs of the workspace (status: run, done, archive, or a comma "
        "list), newest first, with their subdialogs, run state and number of open questions; `more` counts "
        "the others.",
        (Arg("status", "status", "run, done, archive, or a comma list of them", False, "run"),),
        read_only=True,
    ),
    "list_questions": ToolSpec("Questions the team asked a human (@human) and that wait for an answer (answer_question).", (), True),
    "start_dialog": ToolSpec(
        "Start a dialog with a team member (default: the team's default responder) and send it `message`. "
        "`taskdoc` is the Taskdoc package (*.tsk) the dialog works on. Returns the dialog id.",
        (
            Arg("message", "string", "what to tell the member"),
            Arg("agent", "id", "the member's id (default: the team's default responder)", False),
            Arg("taskdoc", "string", "the Taskdoc package (*.tsk) the dialog works on", False, "tasks/mcp.tsk"),
        ),
        read_only=False,
    ),
    "tell": ToolSpec(
        "Send a follow-up message to a dialog (its agent answers; read it with read_answer).",
        (_DIALOG_ID, Arg("message", "string", "the follow-up message")),
        read_only=False,
    ),
    "answer_question": ToolSpec(
        "Answer a question the team asked (ids from list_questions or read_answer); the dialog goes on.",
        (Arg("question_id", "id", "the question's id"), Arg("answer", "string", "your answer")),
        read_only=False,
    ),
    "read_answer": ToolSpec(
        "The dialog's latest answer, its run state and the questions it waits on. With wait_seconds, first "
        "wait (up to 600 s) until the dialog settles: your last message to it taken up, and it is idle, "
        "failed, or it or a dialog of its tree waits for a human answer.",
        (_DIALOG_ID, Arg("wait_seconds", "number", f"how long to wait for the dialog to settle (0..{MAX_WAIT_S})", False, 0)),
        read_only=True,
    ),
}

_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")


class ArgumentProblem(Exception):
    """A tool call's arguments are wrong; the message says which and how, in plain words."""


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for arg in spec.args:
        prop: dict[str, Any] = {"type": "number" if arg.kind == "number" else "string", "description": arg.description}
        if arg.default is not None:
            prop["default"] = arg.default
        properties[arg.name] = prop
    required = [a.name for a in spec.args if a.required]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def parse_arguments(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a call to ``tool`` as the handler takes them, or ``ArgumentProblem``."""
    spec = TOOL_SPECS[tool]
    names = [a.name for a in spec.args]
    for key in arguments:
        if key not in names:
            near = _snake(key)
            hint = f"; did you mean `{near}`?" if near in names else f"; it takes {', '.join(names) or 'no arguments'}"
            raise ArgumentProblem(f"`{key}` is not an argument of {tool}{hint}")
    parsed: dict[str, Any] = {}
    for arg in spec.args:
        if arg.name not in arguments:
            if arg.required:
                raise ArgumentProblem(f"`{arg.name}` is missing: {tool} needs {', '.join(a.name for a in spec.args if a.required)}")
            parsed[arg.name] = arg.default
            continue
        parsed[arg.name] = _value(arg, arguments[arg.name])
    return parsed


def _value(arg: Arg, value: Any) -> Any:
    if arg.kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ArgumentProblem(f"`{arg.name}` must be a number, not {json.dumps(value)[:40]}")
        return float(value)
    if not isinstance(value, str):
        raise ArgumentProblem(f"`{arg.name}` must be a string, not {json.dumps(value)[:40]}")
    if arg.kind == "id":
        if value != value.strip():
            raise ArgumentProblem(f"`{arg.name}` has spaces around it: {value!r}; pass the id exactly as it was given")
        if not _ID.fullmatch(value) or ".." in value:
            raise ArgumentProblem(f"`{arg.name}` {value[:60]!r} is not an id (letters, digits, _ . : - only)")
    if arg.kind == "status":
        wanted = [s for s in value.split(",") if s]
        unknown = [s for s in wanted if s not in DIALOG_STATUSES] or ([] if wanted else [value])
        if unknown:
            raise ArgumentProblem(f"`{arg.name}` {unknown[0]!r} is not a status; use {', '.join(DIALOG_STATUSES)} or a comma list")
    return value


def build_server(rtws: Rtws) -> Server[Any]:
    """The low-level MCP server of ``dominds mcp``: six tools over the daemon of ``rtws``."""
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

    async def list_dialogs(status: str) -> CallToolResult:
        return await daemon_call(lambda c: _list(c, status))

    async def _list(client: DaemonClient, status: str) -> dict[str, Any]:
        data = await client.get("/api/dialogs", status=status, limit=str(LIST_LIMIT))
        return {"dialogs": [_trim(n) for n in data.get("dialogs", [])], "more": data.get("more", 0)}

    async def list_questions() -> CallToolResult:
        async def run(client: DaemonClient) -> dict[str, Any]:
            data = await client.get("/api/q4h")
            keep = ("id", "selfId", "rootId", "agentId", "tellaskHead", "bodyContent", "askedAt")
            return {"questions": [{k: q.get(k) for k in keep} for q in data.get("questions", [])]}

        return await daemon_call(run)

    async def start_dialog(message: str, agent: str | None, taskdoc: str) -> CallToolResult:
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
        async def run(client: DaemonClient) -> dict[str, Any]:
            msg_id = f"mcp-{uuid.uuid4().hex[:12]}"
            await client.post(f"/api/dialogs/{dialog_id}/messages", {"content": message, "msgId": msg_id})
            awaited[dialog_id] = msg_id
            return {"dialogId": dialog_id, "msgId": msg_id}

        return await daemon_call(run)

    async def answer_question(question_id: str, answer: str) -> CallToolResult:
        async def run(client: DaemonClient) -> dict[str, Any]:
            msg_id = f"mcp-{uuid.uuid4().hex[:12]}"
            data = await client.post(f"/api/q4h/{question_id}/answer", {"content": answer, "msgId": msg_id})
            if data.get("queued", True):  # an MCP server's question: the answer goes to it, not into the dialog
                awaited[data["selfId"]] = msg_id
            return {"answered": question_id, "dialogId": data["selfId"], "rootId": data.get("rootId")}

        return await daemon_call(run)

    async def read_answer(dialog_id: str, wait_seconds: float, report: Report = _no_report) -> CallToolResult:
        async def run(client: DaemonClient) -> dict[str, Any]:
            budget = max(0.0, min(float(wait_seconds), MAX_WAIT_S))
            start = time.monotonic()
            said: tuple[str, float] | None = None  # what the last progress said, and when
            while True:
                show = await client.get(f"/api/dialogs/{dialog_id}")
                root_id = (show.get("dialog") or {}).get("rootId", dialog_id)
                questions = [q for q in (await client.get("/api/q4h")).get("questions", []) if q.get("rootId") == root_id]
                done = settled(show, questions, awaited.get(dialog_id))
                waited = time.monotonic() - start
                if done or waited >= budget:
                    break
                state = (show.get("runState") or {}).get("kind", "unknown") + (", generating" if show.get("generating") else "")
                if said is None or said[0] != state or waited - said[1] >= PROGRESS_EVERY_S:
                    await report(round(waited, 1), budget, f"waiting for {dialog_id}: {state}")
                    said = (state, waited)
                await asyncio.sleep(0.25)
            msg_id = awaited.get(dialog_id)
            if msg_id is not None and taken_up(show, msg_id):
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

    handlers: dict[str, Callable[..., Awaitable[CallToolResult]]] = {
        "list_dialogs": list_dialogs, "list_questions": list_questions, "start_dialog": start_dialog,
        "tell": tell, "answer_question": answer_question, "read_answer": read_answer,
    }  # fmt: skip
    tools = [
        Tool(name=name, description=spec.description, input_schema=input_schema(spec), annotations=_READ if spec.read_only else _WRITE)
        for name, spec in TOOL_SPECS.items()
    ]

    async def on_list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        if params.name not in handlers:
            return _result(f"no tool {params.name!r}; the tools are {', '.join(handlers)}", True)
        try:
            arguments = parse_arguments(params.name, dict(params.arguments or {}))
        except ArgumentProblem as exc:
            return _result(f"{params.name}: {exc}", True)
        if params.name == "read_answer":
            arguments["report"] = ctx.session.report_progress
        return await handlers[params.name](**arguments)

    return Server("dominds", version=__version__, instructions=INSTRUCTIONS, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
