"""What the daemon does for each client message (validated in ``messages.py``).

Handlers run one at a time per connection, in arrival order. Anything a handler refuses raises
``EngineError``, ``StoreError`` or ``TaskdocError``; ``ws.py`` turns that into an ``error`` reply and
the connection carries on.

Following (see docs/protocol.md §Following): ``display_dialog`` and ``create_dialog`` are handled
synchronously, with no ``await`` between reading the dialog's state and joining its channel, so the
client gets a snapshot (a replay, or the buffered events it missed) followed by every later event,
with no gap and — thanks to the connection's ``SeqTracker`` — no event twice.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from dominds import __version__
from dominds.dialog.model import Dialog
from dominds.driver.engine import Engine, EngineError
from dominds.driver.errors import QueueFull
from dominds.pubchan import GLOBAL
from dominds.server import messages as m
from dominds.server.hub import Connection
from dominds.server.replay import course_records_off_loop, replay_page
from dominds.server.views import dialog_summary, reminders_payload, resolve_dialog, taskdoc_payload

PROTOCOL_VERSION = 2
"""1: replays were whole courses, the outbox bound counted frames. 2: paged replays (``display_course``
``before``/``after``/``aroundCall``, record fields on ``course_update``), the outbox bound in bytes."""


def welcome(engine: Engine) -> dict[str, Any]:
    return {
        "type": "welcome",
        "message": "Connected to Dominds",
        "server": "dominds",
        "version": __version__,
        "protocol": PROTOCOL_VERSION,
        "serverWorkLanguage": "en",
        "supportedLanguageCodes": ["en", "zh"],
        "epoch": engine.pubchan.epoch,
        "seq": engine.pubchan.last_seq(GLOBAL),
        "rtws": str(engine.rtws.root),
    }


def problems_snapshot(engine: Engine) -> dict[str, Any]:
    return {"type": "problems_snapshot", "problems": engine.problems_payload()}


async def _dialog(conn: Connection, ref: m.DialogRef) -> Dialog:
    return await resolve_dialog(conn.hub.engine, ref.selfId, ref.rootId)


def _with_request_id(reply: dict[str, Any], request_id: str | int | None) -> dict[str, Any]:
    """A reply echoes the request's ``requestId`` when it had one (and has no such key otherwise)."""
    if request_id is not None:
        reply["requestId"] = request_id
    return reply


def _ack(message: m.ClientMessage, **fields: Any) -> dict[str, Any]:
    return _with_request_id({"type": "ack", "requestType": message.type, **fields}, message.requestId)


def follow_dialog(
    conn: Connection,
    dialog: Dialog,
    *,
    since: m.Since | None,
    mode: m.FollowMode,
    request_id: str | int | None,
) -> None:
    """Join a dialog's channel and send what the client lacks. Synchronous on purpose (no gap)."""
    engine = conn.hub.engine
    pubchan = engine.pubchan
    key = dialog.self_id
    if mode == "replace":
        for other in [k for k in conn.followed if k != key]:
            conn.unfollow(other)
    missed = pubchan.events_since(key, since.epoch, since.seq) if since is not None else None
    if missed is not None and sum(_text_chars(e) for e in missed) > conn.resume_limit():
        missed = None  # too much to send at once: the last page instead (a resume never overflows the outbox)
    seq = pubchan.last_seq(key)
    conn.follow(key, dialog.meta.task_doc_path)
    tracker = conn.tracker(key)
    if missed is not None and since is not None:
        tracker.cover(min(since.seq, seq))  # the client has everything up to `since`
        texts = [conn.hub.encoder.encode(e) for e in missed if tracker.admit(int(e["seq"]))]
        tracker.cover(seq)  # events still waiting to be durable are in `missed`: not sent live again
    else:  # the course's last page: earlier ones come with `display_course{before}` (paging)
        page = replay_page(dialog, dialog.latest.current_course, epoch=pubchan.epoch, seq=seq)
        texts = [json.dumps(e, ensure_ascii=False) for e in page.events]
        tracker.cover(seq)
    conn.send(
        _with_request_id(
            {
                "type": "dialog_ready",
                **dialog_summary(engine, dialog),
                "epoch": pubchan.epoch,
                "seq": seq,
                "mode": "resume" if missed is not None else "replay",
                "eventCount": len(texts),
                "following": sorted(conn.followed),
            },
            request_id,
        )
    )
    for text in texts:
        conn.send_text(text)


def _text_chars(event: dict[str, Any]) -> int:
    """About the size of an event on the wire: its text fields (what makes an event big) and a little."""
    return 64 + sum(len(value) for value in event.values() if isinstance(value, str))


async def on_set_ui_language(conn: Connection, msg: m.SetUiLanguage) -> None:
    conn.ui_language = msg.uiLanguage
    conn.send(_with_request_id({"type": "ui_language_set", "uiLanguage": msg.uiLanguage}, msg.requestId))


async def on_get_problems(conn: Connection, msg: m.GetProblems) -> None:
    conn.send(_with_request_id(problems_snapshot(conn.hub.engine), msg.requestId))


async def on_create_dialog(conn: Connection, msg: m.CreateDialog) -> None:
    root = conn.hub.engine.create_dialog(msg.agentId, msg.taskDocPath)
    follow_dialog(conn, root, since=None, mode=msg.follow, request_id=msg.requestId)


async def on_display_dialog(conn: Connection, msg: m.DisplayDialog) -> None:
    follow_dialog(conn, await _dialog(conn, msg.dialog), since=msg.since, mode=msg.follow, request_id=msg.requestId)


async def on_unfollow_dialog(conn: Connection, msg: m.UnfollowDialog) -> None:
    conn.unfollow(msg.dialog.selfId)
    conn.send(_ack(msg, following=sorted(conn.followed)))


async def on_display_course(conn: Connection, msg: m.DisplayCourse) -> None:
    """One page of a course, built once the socket's outbox has room (back-pressure in bytes)."""
    if sum(x is not None for x in (msg.before, msg.after, msg.aroundCall)) > 1:
        raise EngineError("display_course takes at most one of `before`, `after` and `aroundCall`")
    await conn.wait_room()
    dialog = await _dialog(conn, msg.dialog)
    if msg.course > dialog.latest.current_course or not dialog.files.course(msg.course).exists():
        raise EngineError(
            f"dialog {dialog.self_id} has no course {msg.course} (courses 1..{dialog.latest.current_course})"
        )
    records = await course_records_off_loop(dialog, msg.course)
    pubchan = conn.hub.engine.pubchan
    page = replay_page(
        dialog,
        msg.course,
        epoch=pubchan.epoch,
        seq=pubchan.last_seq(dialog.self_id),
        before=msg.before,
        after=msg.after,
        around=msg.aroundCall,
        records=records,
    )
    for event in page.events:
        conn.send(_with_request_id(event, msg.requestId) if event["type"] == "course_update" else event)


async def on_display_reminders(conn: Connection, msg: m.DisplayReminders) -> None:
    dialog = await _dialog(conn, msg.dialog)
    reply = {"type": "full_reminders_update", "dialog": dialog.ident, "reminders": reminders_payload(dialog)}
    conn.send(_with_request_id(reply, msg.requestId))


async def on_get_taskdoc(conn: Connection, msg: m.GetTaskdoc) -> None:
    dialog = await _dialog(conn, msg.dialog)
    payload = taskdoc_payload(conn.hub.engine, dialog.meta.task_doc_path, conn.ui_language)
    conn.hub.taskdoc_fingerprints.setdefault(payload["taskDocPath"], payload["fingerprint"])
    conn.send(_with_request_id({"type": "taskdoc_content", "dialog": dialog.ident, **payload}, msg.requestId))


MAX_QUEUED_PER_CONNECTION = 10_000
"""Messages one connection may have waiting unread (in any dialogs) at most: more are refused."""

_queued_by: weakref.WeakKeyDictionary[Connection, dict[str, Dialog]] = weakref.WeakKeyDictionary()
"""Per connection: message id → dialog of the messages it sent that may still be queued."""


async def on_drive_by_user_msg(conn: Connection, msg: m.DriveByUserMessage) -> None:
    dialog = await _dialog(conn, msg.dialog)
    _refuse_when_connection_full(conn)
    prompt = conn.hub.engine.submit_user_message(dialog, msg.content, msg.msgId)
    _queued_by.setdefault(conn, {})[prompt.msg_id] = dialog
    conn.send(_ack(msg, dialog=dialog.ident, msgId=prompt.msg_id))


def _refuse_when_connection_full(conn: Connection) -> None:
    sent = _queued_by.get(conn)
    if sent is None or len(sent) < MAX_QUEUED_PER_CONNECTION:
        return
    for msg_id, dialog in list(sent.items()):  # at the limit only: forget those read since
        if msg_id not in dialog.queue:
            del sent[msg_id]
    if len(sent) >= MAX_QUEUED_PER_CONNECTION:
        raise QueueFull(
            f"this connection already has {len(sent):,} messages waiting to be read (the limit per "
            f"connection is {MAX_QUEUED_PER_CONNECTION:,}); send again once the agents have read some"
        )


async def on_drive_by_user_answer(conn: Connection, msg: m.DriveByUserAnswer) -> None:
    engine = conn.hub.engine
    dialog = await _dialog(conn, msg.dialog)
    where = engine.q4h_index.get(msg.questionId)
    if where is not None and where[1] != dialog.self_id:
        raise EngineError(f"question {msg.questionId!r} was asked in dialog {where[1]}, not {dialog.self_id}")
    engine.answer_question(msg.questionId, msg.content, msg.msgId)
    conn.send(_ack(msg, dialog=dialog.ident, questionId=msg.questionId))


async def on_cancel_queued_msg(conn: Connection, msg: m.CancelQueuedMessage) -> None:
    dialog = await _dialog(conn, msg.dialog)
    conn.hub.engine.cancel_queued_message(dialog, msg.msgId)
    conn.send(_ack(msg, dialog=dialog.ident, msgId=msg.msgId))


async def on_set_dialog_title(conn: Connection, msg: m.SetDialogTitle) -> None:
    dialog = await _dialog(conn, msg.dialog)
    title = conn.hub.engine.rename_dialog(dialog, msg.title)
    conn.send(_ack(msg, dialog=dialog.ident, title=title))


async def on_interrupt_dialog(conn: Connection, msg: m.InterruptDialog) -> None:
    dialog = await _dialog(conn, msg.dialog)
    stopped = conn.hub.engine.stop(dialog)
    conn.send(_ack(msg, dialog=dialog.ident, stopped=stopped))


async def on_emergency_stop(conn: Connection, msg: m.EmergencyStop) -> None:
    conn.send(_ack(msg, stopped=conn.hub.engine.emergency_stop()))


async def on_resume_dialog(conn: Connection, msg: m.ResumeDialog) -> None:
    dialog = await _dialog(conn, msg.dialog)
    resumed = conn.hub.engine.resume(dialog)
    conn.send(_ack(msg, dialog=dialog.ident, resumed=resumed))


async def on_resume_all(conn: Connection, msg: m.ResumeAll) -> None:
    conn.send(_ack(msg, resumed=conn.hub.engine.resume_all()))


async def on_declare_dead(conn: Connection, msg: m.DeclareSubdialogDead) -> None:
    dialog = await _dialog(conn, msg.dialog)
    await conn.hub.engine.declare_dead(dialog, msg.note)
    conn.send(_ack(msg, dialog=dialog.ident))


async def on_get_q4h_state(conn: Connection, msg: m.GetQ4hState) -> None:
    reply = {"type": "q4h_state_response", "questions": conn.hub.engine.q4h_state()}
    conn.send(_with_request_id(reply, msg.requestId))


async def on_resume_global(conn: Connection, msg: m.ResumeGlobal) -> None:
    pubchan = conn.hub.engine.pubchan
    missed = pubchan.events_since(GLOBAL, msg.since.epoch, msg.since.seq)
    tracker = conn.tracker(GLOBAL)
    if missed is None:
        seq = pubchan.last_seq(GLOBAL)
        tracker.cover(seq)
        conn.send(
            _with_request_id({"type": "global_reset", "epoch": pubchan.epoch, "seq": seq}, msg.requestId)
        )
        return
    tracker.cover(msg.since.seq)
    conn.deliver_missed(GLOBAL, missed)
    tracker.cover(pubchan.last_seq(GLOBAL))  # those still waiting to be durable were in `missed`
    conn.send(_ack(msg, epoch=pubchan.epoch, seq=pubchan.last_seq(GLOBAL)))


Handler = Callable[[Connection, Any], Awaitable[None]]

HANDLERS: dict[type[Any], Handler] = {
    m.SetUiLanguage: on_set_ui_language,
    m.GetProblems: on_get_problems,
    m.CreateDialog: on_create_dialog,
    m.DisplayDialog: on_display_dialog,
    m.UnfollowDialog: on_unfollow_dialog,
    m.DisplayCourse: on_display_course,
    m.DisplayReminders: on_display_reminders,
    m.GetTaskdoc: on_get_taskdoc,
    m.DriveByUserMessage: on_drive_by_user_msg,
    m.DriveByUserAnswer: on_drive_by_user_answer,
    m.CancelQueuedMessage: on_cancel_queued_msg,
    m.SetDialogTitle: on_set_dialog_title,
    m.InterruptDialog: on_interrupt_dialog,
    m.EmergencyStop: on_emergency_stop,
    m.ResumeDialog: on_resume_dialog,
    m.ResumeAll: on_resume_all,
    m.DeclareSubdialogDead: on_declare_dead,
    m.GetQ4hState: on_get_q4h_state,
    m.ResumeGlobal: on_resume_global,
}
