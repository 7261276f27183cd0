"""Create or reuse the subdialog of one tellask call (TYPE B through the root registry, TYPE C always new).

Crash safety: the caller's pending entry (``subdlg.yaml``) is the commit point of a dispatch; it holds
what recovery needs to finish creating the subdialog if the daemon dies half-way (``materialize_subdialog``
and the assignment helpers are shared with recovery). Below ``tellask_exec.py``, which decides which
calls run and how; the conductor API dispatches through here too.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from dominds.dialog.loader import rebuild_registry
from dominds.dialog.model import Dialog, RootDialog, SubDialog
from dominds.driver import texts
from dominds.driver.services import EngineServices
from dominds.ids import new_dialog_id, now_iso
from dominds.store.course_records import HumanTextRecord, SubdialogCreatedRecord, TeammateCallResultRecord
from dominds.store.records import (
    AskedBack,
    Assignment,
    DialogMeta,
    LatestState,
    PendingSubdialog,
    QueuedPrompt,
    RegistryEntry,
)
from dominds.tellask_events import TellaskCall

log = logging.getLogger("dominds.subdialogs")


@dataclass(frozen=True)
class CallToRun:
    call: TellaskCall
    call_id: str
    """Runtime call id: the parser's deterministic id qualified by course, generation and segment."""
    form: Literal["text", "tools"] = "text"
    """How the model made the call: a ``!?@`` block, or a Tellask function tool (``tool_form.py``)."""


def runtime_call_id(parser_call_id: str, course: int, genseq: int, segment: int | str) -> str:
    """The parser's id is deterministic per text; the same text in a later message must still be a new call."""
    return f"{parser_call_id}.{course}.{genseq}.{segment}"


def record_note(dialog: Dialog, item: CallToRun, genseq: int, note: str) -> None:
    """Answer a call site with a ``[Dominds note]`` (a failed call result the model reads) instead of a run."""
    text = texts.dominds_note(note)
    dialog.append(
        TeammateCallResultRecord(
            ts=now_iso(),
            genseq=genseq,
            call_id=item.call_id,
            responder_id="dominds",
            tellask_head=item.call.headline,
            status="failed",
            result=text,
        )
    )
    dialog.publish(
        {
            "type": "teammate_call_response_evt",
            "course": dialog.latest.current_course,
            "calling_genseq": genseq,
            "responderId": "dominds",
            "tellaskHead": item.call.headline,
            "status": "failed",
            "result": text,
            "callId": item.call_id,
        }
    )


def waits_on(engine: EngineServices, start: Dialog, target: Dialog) -> bool:
    """Whether ``start`` waits, directly or through other subdialogs, for ``target`` (a delegation cycle)."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        dialog = stack.pop()
        if dialog.self_id == target.self_id:
            return True
        if dialog.self_id in seen:
            continue
        seen.add(dialog.self_id)
        for entry in dialog.pending:
            if entry.call_type == "A":
                continue  # an ask-back is answered as an obligation, even while its asker waits
            callee = engine.try_get_dialog(dialog.root_id, entry.subdialog_id)
            if callee is not None:
                stack.append(callee)
    return False


async def dispatch(
    engine: EngineServices,
    caller: Dialog,
    item: CallToRun,
    target: str,
    call_type: str,
    session: str | None,
    genseq: int,
    *,
    fbr: bool = False,
    collective: list[str] | None = None,
) -> None:
    root = caller.root
    if call_type == "B":
        assert session is not None
        key = f"{target}!{session}"
        async with root.registry_lock:  # one lookup-or-create at a time: identical calls share one subdialog
            entry = root.type_b.get(key)
            existing = engine.try_load_sub(root, entry.subdialog_id) if entry else None
            if entry is not None and (existing is None or f"{existing.agent_id}!{existing.meta.tellask_session}" != key):
                existing = _session_from_its_files(engine, root, key, entry.subdialog_id, existing)
            if existing is not None and not existing.is_dead and waits_on(engine, existing, caller):
                record_note(
                    caller,
                    item,
                    genseq,
                    f"`@{target}` (session `{session}`) is itself waiting, directly or through teammates, for your "
                    "answer: asking it now would deadlock you both. Answer your own request first, or use a fresh "
                    f"tellask (`!?@{target}` without a session).",
                )
                return
            if existing is not None and not existing.is_dead:
                await _reassign(engine, caller, existing, item, genseq, collective)
                root.type_b[key] = root.type_b[key].model_copy(update={"last_accessed": now_iso()})
                root.save_registry()
                return
            sub = await _create(engine, caller, item, target, "B", session, genseq, fbr, collective)
            root.type_b[key] = RegistryEntry(
                subdialog_id=sub.self_id, agent_id=target, tellask_session=session, created_at=now_iso(), last_accessed=now_iso()
            )
            root.save_registry()
        return
    await _create(engine, caller, item, target, "C", None, genseq, fbr, collective)


def _session_from_its_files(
    engine: EngineServices, root: RootDialog, key: str, stale_id: str, named: SubDialog | None
) -> SubDialog | None:
    """The registry names a subdialog that is not there, or (``named``) one that holds another session (a
    hand edit, a restored backup): the session's own files say which subdialog it is. Creating a new one
    instead forked the session and orphaned its history (the registry was rebuilt only when missing or
    unreadable, never when stale); taking the named one sent the call to another member's session."""
    found = rebuild_registry(root.files).get(key)
    held = f"which holds `{named.agent_id}!{named.meta.tellask_session or ''}`" if named else "which does not exist"
    notice = f"registry.yaml named subdialog {stale_id} for `{key}`, {held}; "
    if found is None:
        root.notices.append(notice + "no other subdialog holds that session, so a new one starts it")
        return None
    root.notices.append(notice + f"its session is subdialog {found.subdialog_id}, from the subdialogs' files")
    log.warning("dialog %s: %s", root.root_id, root.notices[-1])
    root.type_b[key] = found
    return engine.try_load_sub(root, found.subdialog_id)


def _pending_entry(
    sub_id: str, target: str, call_type: str, session: str | None, item: CallToRun, fbr: bool, collective: list[str] | None
) -> PendingSubdialog:
    return PendingSubdialog(
        subdialog_id=sub_id,
        agent_id=target,
        call_type=call_type,  # type: ignore[arg-type]
        tellask_session=session,
        tellask_head=item.call.headline,
        tellask_body=item.call.body,
        call_id=item.call_id,
        created_at=now_iso(),
        fbr=fbr,
        collective_targets=collective,
    )


async def _create(
    engine: EngineServices,
    caller: Dialog,
    item: CallToRun,
    target: str,
    call_type: str,
    session: str | None,
    genseq: int,
    fbr: bool,
    collective: list[str] | None,
) -> SubDialog:
    sub_id = new_dialog_id()
    entry = _pending_entry(sub_id, target, call_type, session, item, fbr, collective)
    async with caller.suspension_lock:
        caller.pending.append(entry)
    try:
        await caller.commit_pending()  # commit point (one write for all calls of this message)
    except asyncio.CancelledError:
        # Stopped at the commit point: the entry is written all the same (commit_pending), so the call is
        # made, as recovery would make it; the subdialog exists before the stop goes on (never a caller
        # waiting on a subdialog that is not there).
        _announce(caller, materialize_subdialog(engine, caller.root, caller, entry), entry, genseq, reused=False)
        raise
    sub = materialize_subdialog(engine, caller.root, caller, entry)
    _announce(caller, sub, entry, genseq, reused=False)
    return sub


def materialize_subdialog(engine: EngineServices, root: RootDialog, caller: Dialog, entry: PendingSubdialog) -> SubDialog:
    """Create a subdialog's files from its caller's pending entry (also used by recovery)."""
    meta = subdialog_meta(root, caller, entry)
    latest = LatestState(last_modified=now_iso(), queued_prompts=[assignment_prompt(caller, entry)], needs_drive=True)
    sub = engine.create_subdialog(root, meta, latest)
    engine.want(sub)  # needsDrive is already in the latest.yaml just written
    return sub


def subdialog_meta(root: RootDialog, caller: Dialog, entry: PendingSubdialog) -> DialogMeta:
    """The ``dialog.yaml`` of the subdialog a pending entry asked for (it holds everything needed)."""
    return DialogMeta(
        id=entry.subdialog_id,
        root_id=root.self_id,
        agent_id=entry.agent_id,
        task_doc_path=root.meta.task_doc_path,
        created_at=entry.created_at,
        supdialog_id=caller.self_id,
        tellask_session=entry.tellask_session,
        assignment_from_sup=assignment_of(caller, entry),
        fbr=entry.fbr,
    )


def assignment_of(caller: Dialog, entry: PendingSubdialog) -> Assignment:
    return Assignment(
        tellask_head=entry.tellask_head,
        tellask_body=entry.tellask_body,
        origin_member_id=caller.agent_id,
        caller_dialog_id=caller.self_id,
        call_id=entry.call_id,
        call_type=entry.call_type,
        collective_targets=entry.collective_targets,
    )


def assignment_msg_id(call_id: str, subdialog_id: str) -> str:
    """The id of the prompt that gives a subdialog the request of call ``call_id`` (deterministic)."""
    return f"asg-{call_id}-{subdialog_id}"


def assignment_prompt(caller: Dialog, entry: PendingSubdialog) -> QueuedPrompt:
    if entry.fbr:
        content = texts.fbr_assignment_text(caller.agent_id, entry.tellask_head, entry.tellask_body)
    else:
        content = texts.assignment_text(
            entry.agent_id, caller.agent_id, entry.tellask_head, entry.tellask_body, entry.collective_targets
        )
    return QueuedPrompt(
        msg_id=assignment_msg_id(entry.call_id, entry.subdialog_id),
        content=content,
        grammar="markdown",
        origin="assignment",
        assignment=assignment_of(caller, entry),
        queued_at=now_iso(),
    )


def prompt_event_fields(prompt: QueuedPrompt | HumanTextRecord) -> dict[str, dict[str, str]]:
    """What an ``end_of_user_saying_evt`` adds for a prompt that frames a tellask for the model: the
    tellask as it was written (``assignment`` of a subdialog, ``askBack`` of a tellask-back)."""
    if prompt.assignment is not None:
        return {"assignment": assignment_event_fields(prompt.assignment)}
    asked = prompt.ask_back
    if asked is None and prompt.origin == "tellask_back" and prompt.call_id:
        asked = _ask_back_of_old_prompt(prompt.content, prompt.call_id)
    if asked is not None and prompt.from_dialog_id and prompt.call_id:
        return {
            "askBack": {
                "fromAgentId": asked.from_agent_id,
                "fromDialogId": prompt.from_dialog_id,
                "callId": prompt.call_id,
                "tellaskHead": asked.tellask_head,
                "tellaskBody": asked.tellask_body,
            }
        }
    return {}


def _ask_back_of_old_prompt(content: str, call_id: str) -> AskedBack | None:
    """The ask-back of a prompt recorded before prompts kept it, when its framed text gives the words back
    for certain (``texts.words_of_tellask_back_text``); otherwise the panel shows the framed text."""
    words = texts.words_of_tellask_back_text(content, call_id)
    if words is None:
        return None
    asker, headline, body = words
    return AskedBack(from_agent_id=asker, tellask_head=headline, tellask_body=body)


def assignment_event_fields(assignment: Assignment) -> dict[str, str]:
    """The ``assignment`` of an ``end_of_user_saying_evt``: the tellask as its caller wrote it."""
    return {
        "fromAgentId": assignment.origin_member_id,
        "callerDialogId": assignment.caller_dialog_id,
        "callId": assignment.call_id,
        "tellaskHead": assignment.tellask_head,
        "tellaskBody": assignment.tellask_body,
    }


async def _reassign(
    engine: EngineServices, caller: Dialog, sub: Dialog, item: CallToRun, genseq: int, collective: list[str] | None
) -> None:
    """TYPE B hit: route the session's next answer to this (latest) caller and give it the new request."""
    entry = _pending_entry(
        sub.self_id, sub.agent_id, "B", sub.meta.tellask_session, item, sub.meta.fbr, collective
    )
    previous = sub.meta.assignment_from_sup
    async with caller.suspension_lock:
        # A repeat call by the same caller keeps the earlier entry: the session's answer goes to every call
        # site of this caller that is still waiting for it (supply_response), so none is left without one.
        caller.pending.append(entry)
        caller.save_pending()  # commit point
    sub.meta = sub.meta.model_copy(update={"assignment_from_sup": assignment_of(caller, entry)})
    sub.files.write_meta(sub.meta)
    sub.queue.put(assignment_prompt(caller, entry), with_latest=True)  # written by request_drive
    engine.request_drive(sub)
    if previous is not None and previous.caller_dialog_id != caller.self_id:
        await engine.supersede(sub, previous)
    _announce(caller, sub, entry, genseq, reused=True)


def _announce(caller: Dialog, sub: Dialog, entry: PendingSubdialog, genseq: int, *, reused: bool) -> None:
    caller.append(
        SubdialogCreatedRecord(
            ts=now_iso(),
            genseq=genseq,
            call_id=entry.call_id,
            call_type="B" if entry.call_type == "B" else "C",
            subdialog_id=sub.self_id,
            target_agent_id=entry.agent_id,
            tellask_head=entry.tellask_head,
            tellask_body=entry.tellask_body,
            reused=reused,
        )
    )
    caller.publish(
        {
            "type": "subdialog_created_evt",
            "course": caller.latest.current_course,
            "genseq": genseq,
            "parentDialog": caller.ident,
            "subDialog": sub.ident,
            "targetAgentId": entry.agent_id,
            "tellaskHead": entry.tellask_head,
            "tellaskBody": entry.tellask_body,
            "callId": entry.call_id,
            "callType": entry.call_type,
            "reused": reused,
        }
    )
