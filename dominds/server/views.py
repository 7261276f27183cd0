"""Lookups and payloads shared by the websocket protocol and the JSON API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.engine import Engine
from dominds.driver.intake import visible_queue
from dominds.driver.titles import display_title
from dominds.ids import is_dialog_id
from dominds.server.render import render_markdown
from dominds.server.taskdoc_view import taskdoc_sections
from dominds.store.errors import DialogNotFoundError
from dominds.taskdoc import load_taskdoc
from dominds.taskdoc_discovery import taskdoc_fingerprint


async def resolve_dialog(engine: Engine, self_id: str, root_id: str | None = None) -> Dialog:
    """A dialog by id (any status); ``DialogNotFoundError`` for an unknown or malformed id. One that is
    not in memory is read in a worker thread (``Engine.get_dialog_off_loop``): a long dialog's course
    held the event loop for as long as it took to read."""
    for value in (self_id, root_id):
        if value is not None and not is_dialog_id(value):
            raise DialogNotFoundError(f"unknown dialog {value!r} (not a dialog id)")
    if root_id is not None:
        return await engine.get_dialog_off_loop(root_id, self_id)
    return await engine.find_dialog_off_loop(self_id)


def dialog_summary(engine: Engine, dialog: Dialog) -> dict[str, Any]:
    """Identity and current state of one dialog (the head of ``dialog_ready`` and ``GET /api/dialogs/{id}``)."""
    meta, latest = dialog.meta, dialog.latest
    summary: dict[str, Any] = {
        "dialog": dialog.ident,
        "title": display_title(dialog),
        "agentId": dialog.agent_id,
        "taskDocPath": meta.task_doc_path,
        "status": dialog.root.status,
        "isRoot": dialog.is_root,
        "conductor": meta.conductor,
        "currentCourse": latest.current_course,
        "totalCourses": latest.current_course,
        "runState": latest.run_state.to_disk(),
        "generating": latest.generating,
        "q4h": [engine.question_payload(dialog, q) for q in dialog.q4h],
        "queuedPrompts": visible_queue(dialog),
        "reminders": reminders_payload(dialog),
    }
    if not dialog.is_root:
        summary["supdialogId"] = meta.supdialog_id
        summary["tellaskSession"] = meta.tellask_session
        if meta.assignment_from_sup is not None:
            # the header shows the body rendered, as the Assignment bubble does (never the raw markdown)
            body_html = render_markdown(meta.assignment_from_sup.tellask_body)
            summary["assignmentFromSup"] = {**meta.assignment_from_sup.to_disk(), "bodyHtml": body_html}
    if dialog.load_error:
        summary["loadError"] = dialog.load_error
    if dialog.notices:
        summary["notices"] = list(dialog.notices)
    if meta.forked_from is not None:
        summary["forkedFrom"] = meta.forked_from.to_disk()
    return summary


def reminders_payload(dialog: Dialog) -> list[dict[str, Any]]:
    return [{"id": r.id, "content": r.content, "owner": r.owner} for r in dialog.reminders]


def taskdoc_payload(engine: Engine, path: str, lang: str) -> dict[str, Any]:
    """The Taskdoc as people read it: each section once, with its file (see ``taskdoc_view.py``).

    ``lang`` is kept for the section notes a future version may translate; the text the agents see
    (``render_effective_taskdoc``) is not sent: it is for the model, not for people.
    """
    taskdoc = load_taskdoc(engine.rtws.root, path)
    return {
        "taskDocPath": taskdoc.rel_path,
        "exists": taskdoc.exists,
        "fingerprint": taskdoc_fingerprint(engine.rtws.root, path),
        **taskdoc_sections(engine.rtws.root, taskdoc),
    }


def team_payload(engine: Engine) -> dict[str, Any]:
    team = engine.config.get().team
    return {
        "defaultResponder": team.default_responder,
        "members": [
            {
                "id": m.id,
                "name": m.name,
                "icon": m.icon,
                "gofor": dict(m.gofor) if isinstance(m.gofor, Mapping) else list(m.gofor),
                "provider": m.provider,
                "model": m.model,
            }
            for m in team.visible_members()
        ],
    }
