"""The client events of seed 001 and their answers (reference §2.1 "Dispatch" and "Session checks").

Bad input is answered, never fatal: protocol errors (bad JSON, no ``event``, unknown event, missing
``session_id``) are ``system.error``; requests about a session that cannot be honoured are ``agent.error``
with the session's id; accepted control requests are acknowledged with ``system.notice``
(``metadata: {action, ok, task_id?}``). The texts start like the origin's so existing clients still
recognise them, and then say what exactly was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dominds.workflows.plan_solve.events import USER_EVENTS, make_event
from dominds.workflows.plan_solve.session import Connection, PlanSolveService, Session

Handler = Callable[[PlanSolveService, Session, dict[str, Any]], Awaitable[None]]


async def handle_frame(service: PlanSolveService, conn: Connection, text: str) -> None:
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        conn.send(make_event("system.error", content=f"Invalid JSON: {exc}"))
        return
    if not isinstance(message, dict) or not isinstance(message.get("event"), str):
        conn.send(
            make_event(
                "system.error", content='Invalid message: expected a JSON object with a string "event" field'
            )
        )
        return
    event = message["event"]
    if event == "user.create_session":
        _create_session(service, conn)
        return
    if event not in USER_EVENTS:
        known = ", ".join(USER_EVENTS)
        conn.send(
            make_event(
                "system.error",
                content=f"Unknown event type or missing session_id: unknown event {event!r} (known: {known})",
            )
        )
        return
    session_id = message.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        conn.send(
            make_event(
                "system.error",
                content=f"Unknown event type or missing session_id: {event} needs a session_id",
            )
        )
        return
    session = conn.sessions.get(session_id)
    if session is None:
        conn.send(
            make_event(
                "agent.error", session_id=session_id, content="Session not found", metadata={"event": event}
            )
        )
        return
    if session.state == "closed":
        session.emit("agent.error", "Session is closed", {"event": event})
        return
    await _HANDLERS[event](service, session, message)


def _create_session(service: PlanSolveService, conn: Connection) -> None:
    session = Session(service, conn)
    service.sessions[session.id] = session
    conn.sessions[session.id] = session
    session.emit(
        "agent.session_created",
        "Session created successfully",
        {"agent_name": service.settings.agent_name, "connection_id": conn.id},
    )


async def _user_message(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        session.emit("agent.error", "Message content must be a text string", {"event": "user.message"})
        return
    if not content or not content.strip():
        session.emit("agent.error", "Message content cannot be empty", {"event": "user.message"})
        return
    if session.state == "running":
        session.emit(
            "agent.error", "Agent is currently running, please try again later", {"event": "user.message"}
        )
        return
    metadata = message.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        session.emit("agent.error", "metadata must be an object", {"event": "user.message"})
        return
    metadata = metadata or {}
    csv_path = service.default_csv()
    if metadata.get("csv_path") is not None:
        chosen = _workspace_file(service.workspace_root, metadata["csv_path"])
        if isinstance(chosen, str):
            session.emit("agent.error", f"metadata.csv_path {chosen}", {"event": "user.message"})
            return
        csv_path = chosen
    confirm_plan = metadata.get("confirm_plan")
    if confirm_plan is not None and not isinstance(confirm_plan, bool):
        session.emit("agent.error", "metadata.confirm_plan must be true or false", {"event": "user.message"})
        return
    session.start(content.strip(), csv_path, confirm_plan)


async def _user_response(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    step_id = message.get("step_id")
    if not isinstance(step_id, str) or not step_id:
        session.emit("agent.error", "Missing step_id for user.response", {"event": "user.response"})
        return
    content = message.get("content")
    if not isinstance(content, dict):
        session.emit(
            "agent.error",
            'user.response content must be an object such as {"confirmed": true}',
            {"event": "user.response"},
        )
        return
    if session.pipeline is None or not session.pipeline.confirmations.answer(step_id, content):
        session.emit(
            "agent.error", f"No pending confirmation with step_id {step_id!r}", {"event": "user.response"}
        )


async def _user_cancel(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    if await session.cancel():
        session.emit("agent.interrupted", "Execution cancelled")
    else:
        _notice(session, "No execution in progress to cancel", "cancel", False)


async def _task_control(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    action = message["event"].removeprefix("user.")
    content = message.get("content")
    raw = content.get("task_id") if isinstance(content, dict) else None
    if raw is None:
        session.emit("agent.error", f"Missing task_id for {action}", {"event": message["event"]})
        return
    task_id = _task_id(raw)
    if task_id is None:
        session.emit(
            "agent.error",
            f"Invalid task_id {raw!r} for {action}: expected a positive integer",
            {"event": message["event"]},
        )
        return
    pipeline = session.pipeline if session.state == "running" else None
    if pipeline is None:
        ok, text = (
            False,
            f"No run in progress: task {task_id} cannot be {'cancelled' if action == 'cancel_task' else 'restarted'}",
        )
    elif action == "cancel_task":
        ok, text = pipeline.cancel_task(task_id)
    else:
        ok, text = pipeline.restart_task(task_id)
    _notice(session, text, action, ok, task_id=task_id)


async def _cancel_plan(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    pipeline = session.pipeline if session.state == "running" else None
    ok, text = pipeline.cancel_plan() if pipeline is not None else (False, "No planning in progress")
    _notice(session, text, "cancel_plan", ok)


async def _replan(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    content = message.get("content")
    question = content.get("question") if isinstance(content, dict) else None
    if question is not None and (not isinstance(question, str) or not question.strip()):
        session.emit(
            "agent.error", "Replan question must be a non-empty text string", {"event": "user.replan"}
        )
        return
    pipeline = session.pipeline if session.state == "running" else None
    if pipeline is None:
        _notice(session, "Replan request rejected: no run in progress", "replan", False)
        return
    ok, text = pipeline.replan(question.strip() if question else None)
    if not ok:
        session.emit("agent.error", text, {"event": "user.replan"})
        _notice(session, f"Replan request rejected: {text}", "replan", False)
        return
    _notice(session, text, "replan", True)


async def _close_session(service: PlanSolveService, session: Session, message: dict[str, Any]) -> None:
    await session.close()


def _notice(session: Session, text: str, action: str, ok: bool, **extra: Any) -> None:
    session.emit("system.notice", text, {"action": action, "ok": ok, **extra})


def _task_id(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    return raw if isinstance(raw, int) and raw > 0 else None


def _workspace_file(root: Path, raw: Any) -> Path | str:
    """A data file inside the workspace, or why it cannot be used."""
    if not isinstance(raw, str) or not raw.strip():
        return "must be a workspace-relative path"
    path = (root / raw.strip()).resolve()
    if not path.is_relative_to(root.resolve()):
        return f"{raw!r} is outside the workspace"
    if not path.is_file():
        return f"{raw!r} is not a file in the workspace"
    return path


_HANDLERS: dict[str, Handler] = {
    "user.message": _user_message,
    "user.response": _user_response,
    "user.cancel": _user_cancel,
    "user.cancel_task": _task_control,
    "user.restart_task": _task_control,
    "user.cancel_plan": _cancel_plan,
    "user.replan": _replan,
    "user.close_session": _close_session,
}
