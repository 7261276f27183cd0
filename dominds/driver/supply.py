"""Supplying answers: a subdialog's response to its current caller, and an ask-back answer to the asker.

A response is supplied exactly once, keyed by (subdialogId, callId), and only when the subdialog can
itself drive (DESIGN §4.4). The unblocked caller is marked ``needsDrive`` and woken by the one scheduler,
so it is revived once however many answers arrive.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Literal

from dominds.dialog.model import Dialog
from dominds.driver import texts
from dominds.driver.services import EngineServices
from dominds.ids import now_iso
from dominds.store.course_records import TeammateResponseRecord
from dominds.store.records import Assignment, InboundTellaskBack, PendingSubdialog, SubdialogResponse


async def supply_response(
    engine: EngineServices,
    sub: Dialog,
    assignment: Assignment,
    response: str,
    status: Literal["completed", "failed"] = "completed",
    *,
    failure_reason: str = "",
) -> None:
    """Record ``response`` in the caller named by ``assignment`` (nothing when it was supplied already, or
    the caller no longer waits for it)."""
    caller = engine.try_get_dialog(sub.root_id, assignment.caller_dialog_id)
    if caller is None:
        return
    async with caller.suspension_lock:
        if (sub.self_id, assignment.call_id) in caller.supplied_response_keys():
            return
        entry = next(
            (p for p in caller.pending if p.subdialog_id == sub.self_id and p.call_id == assignment.call_id), None
        )
        if entry is None:
            return  # late or duplicate: the caller no longer waits for this call
        sub.files.write_response(
            SubdialogResponse(
                call_id=assignment.call_id,
                caller_dialog_id=caller.self_id,
                response=response,
                status=status,
                completed_at=now_iso(),
            )
        )
        record_answers(caller, sub, entry, status, response, failure_reason)
    # Revived before the index is rewritten: the files never show the tree at rest while a drive is due.
    engine.after_unblock(caller)
    # One index write for every answer that arrives in the same loop turn (a fan-out's answers come
    # together: a write per answer rewrote a 100-entry file 100 times). The course records above are
    # the truth; a crash before this write leaves answered entries that recovery drops.
    await caller.commit_pending()
    engine.conductors.resolve(sub, entry.call_id, response, status, failure_reason)


def record_answers(
    caller: Dialog,
    sub: Dialog,
    entry: PendingSubdialog,
    status: Literal["completed", "failed"],
    response: str,
    failure_reason: str = "",
    supplied: AbstractSet[tuple[str, str]] = frozenset(),
) -> None:
    """Record ``sub``'s answer (or, ``failed``, its failure) to ``entry`` in ``caller`` and drop the pending
    entries it answers. Earlier calls of this caller to the same session (say, the same TYPE B call twice in
    one message) were folded into this one: each call site gets the answer. A call in ``supplied`` (recovery:
    recorded before the crash) is only dropped."""
    answered = [entry, *(p for p in calls_answered_by(caller, sub) if p is not entry)]
    for call in answered:
        if (call.subdialog_id, call.call_id) not in supplied:
            if status == "failed":
                result = texts.failed_response_text(caller.agent_id, sub.agent_id, failure_reason, call.tellask_head)
            else:
                result = texts.response_text(caller.agent_id, sub.agent_id, response, call.tellask_head, fbr=sub.meta.fbr)
            record_response(caller, sub, call.call_id, call.call_type, call.tellask_head, status, response, result)
        caller.pending.remove(call)


def calls_answered_by(caller: Dialog, sub: Dialog) -> list[PendingSubdialog]:
    """The caller's pending calls that ``sub``'s next answer answers: its TYPE B and C calls to it (an
    ask-back, TYPE A, is answered the other way)."""
    return [p for p in caller.pending if p.subdialog_id == sub.self_id and p.call_type != "A"]


def record_response(
    caller: Dialog,
    responder: Dialog,
    call_id: str,
    call_type: Literal["A", "B", "C"],
    tellask_head: str,
    status: Literal["completed", "failed"],
    response: str,
    result: str,
) -> None:
    record = TeammateResponseRecord(
        ts=now_iso(),
        call_id=call_id,
        call_type=call_type,
        responder_id=responder.agent_id,
        callee_dialog_id=responder.self_id,
        tellask_head=tellask_head,
        status=status,
        response=response,
        result=result,
        agent_id=caller.agent_id,
        origin_member_id=caller.agent_id,
    )
    caller.append(record)
    caller.publish(
        {
            "type": "teammate_response_evt",
            "course": caller.latest.current_course,
            "responderId": responder.agent_id,
            "calleeDialogId": responder.self_id,
            "calleeDialog": responder.ident,
            "tellaskHead": tellask_head,
            "status": status,
            "result": result,
            "response": response,
            "agentId": caller.agent_id,
            "callId": call_id,
            "originMemberId": caller.agent_id,
        }
    )


async def answer_tellask_back(
    engine: EngineServices, sup: Dialog, inbound: InboundTellaskBack, answer: str, *, failure_reason: str | None = None
) -> None:
    """Give the asking subdialog ``sup``'s answer to its TYPE A question (or, with ``failure_reason``, a failed
    reply: ``sup`` will never answer) and unblock it."""
    asker = engine.try_get_dialog(sup.root_id, inbound.from_dialog_id)
    if asker is not None:
        async with asker.suspension_lock:
            record_ask_back_answer(asker, sup, inbound, answer, failure_reason=failure_reason)
    close_ask_back(sup, inbound)
    if asker is not None:
        engine.after_unblock(asker)


def record_ask_back_answer(
    asker: Dialog, sup: Dialog, inbound: InboundTellaskBack, answer: str, *, failure_reason: str | None = None
) -> None:
    """Record the answer (or the failure) in the asker once (keyed by (sup, callId)) and drop its pending entry."""
    entry = next((p for p in asker.pending if p.call_type == "A" and p.call_id == inbound.call_id), None)
    if entry is not None and (sup.self_id, inbound.call_id) not in asker.supplied_response_keys():
        if failure_reason is None:
            result = texts.response_text(asker.agent_id, sup.agent_id, answer, entry.tellask_head)
            record_response(asker, sup, entry.call_id, "A", entry.tellask_head, "completed", answer, result)
        else:
            result = texts.failed_response_text(asker.agent_id, sup.agent_id, failure_reason, entry.tellask_head)
            record_response(asker, sup, entry.call_id, "A", entry.tellask_head, "failed", "", result)
        asker.pending.remove(entry)
        asker.save_pending()


def close_ask_back(sup: Dialog, inbound: InboundTellaskBack) -> None:
    """The obligation is met: forget it (after the answer was recorded: a crash between repeats it idempotently)."""
    key = (inbound.from_dialog_id, inbound.call_id)
    sup.latest.inbound_tellask_backs = [i for i in sup.latest.inbound_tellask_backs if (i.from_dialog_id, i.call_id) != key]
    sup.save_latest()
