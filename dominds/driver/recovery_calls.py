"""Recovery of tellasks cut short by a crash (part of ``recovery.py``'s reconciliation at daemon start).

Half-finished dispatches are completed from the caller's pending index (the commit point): a missing
subdialog is created (or its lost ``dialog.yaml`` rebuilt), a missing registry key is added, an ask-back
never queued is queued, an answer already persisted but not supplied is supplied, and a supplied one is
not supplied again; a TYPE B re-tellask cut short between its files is finished from its intent. What a
power cut inside a group commit can leave (a call recorded without its pending entry) gets its entry back
when its subdialog is assigned to it, and is otherwise noted to the model as not delivered.
"""

from __future__ import annotations

import logging

from dominds.dialog.model import Dialog, RootDialog
from dominds.driver import questions, texts
from dominds.driver.attention import RESUMABLE_REASONS
from dominds.driver.services import EngineServices
from dominds.driver.subdialogs import (
    assignment_msg_id,
    assignment_of,
    assignment_prompt,
    materialize_subdialog,
    subdialog_meta,
)
from dominds.driver.supply import calls_answered_by, record_answers, record_response
from dominds.driver.tellask_exec import queue_tellask_back
from dominds.ids import now_iso
from dominds.store.course_records import (
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
    TellaskCallRecord,
)
from dominds.store.errors import StoreError
from dominds.store.records import PendingSubdialog, RegistryEntry, RunState

log = logging.getLogger("dominds.recovery")


def stop_reason_to_keep(state: RunState) -> str | None:
    """The reason of a stop that a restart or the disk's return must not undo: a person's (``user_stop``,
    ``emergency_stop``) or a failure no retry would cure (``system_stop``). It is found as
    ``stop_requested`` (a Stop answered before its drive recorded the end) or already ``interrupted`` with
    the generation still open (a Stop the full disk kept the drive's end from recording, or one made while
    the disk had the dialog paused). Before, both of the latter were resumed, as ``server_restart`` or
    ``storage_error``."""
    if state.kind in ("interrupted", "stop_requested") and state.reason and state.reason not in RESUMABLE_REASONS:
        return state.reason
    return None


def unanswered_calls(caller: Dialog) -> list[SubdialogCreatedRecord]:
    """Calls in the caller's current course with no reply, no note and no pending entry: only a power cut
    during a group commit leaves that (the pending entry is the commit point; docs/reliability.md, "Limit")."""
    answered = caller.supplied_response_keys()
    noted = {r.call_id for r in caller.records if isinstance(r, TeammateCallResultRecord)}
    waiting = {(p.subdialog_id, p.call_id) for p in caller.pending}
    return [
        r
        for r in caller.records
        if isinstance(r, SubdialogCreatedRecord)
        and (r.subdialog_id, r.call_id) not in answered
        and (r.subdialog_id, r.call_id) not in waiting
        and r.call_id not in noted
    ]


def restore_pending_entries(root: RootDialog, caller: Dialog) -> None:
    """A power cut kept a dispatch's subdialog, assigned to this very call, but lost the caller's pending
    entry: the call reached its subdialog, so the caller waits for it again (its answer was dropped as
    "late", and the caller, no longer blocked, was driven with its call unanswered). The same caller's
    other unanswered calls to that subdialog are folded into the assigned one, as ``supply_response`` does.
    A subdialog assigned to another call did not get this one: ``recovery`` notes it as not delivered."""
    lost = unanswered_calls(caller)
    waiting = {(p.subdialog_id, p.call_id) for p in caller.pending}
    restored = False
    for record in lost:
        sub = root.local.get(record.subdialog_id)
        assignment = sub.meta.assignment_from_sup if sub is not None and not sub.load_error and not sub.is_dead else None
        if sub is None or assignment is None or assignment.caller_dialog_id != caller.self_id:
            continue
        assigned = (sub.self_id, assignment.call_id)
        if assignment.call_id != record.call_id and assigned not in waiting and not any(
            (r.subdialog_id, r.call_id) == assigned for r in lost
        ):
            continue
        log.warning("dialog %s: call %s reached subdialog %s, its pending entry was lost; restored", caller.self_id, record.call_id, sub.self_id)
        entry = PendingSubdialog(
            subdialog_id=sub.self_id,
            agent_id=record.target_agent_id,
            call_type=record.call_type,
            tellask_session=sub.meta.tellask_session if record.call_type == "B" else None,
            tellask_head=record.tellask_head,
            tellask_body=record.tellask_body,
            call_id=record.call_id,
            created_at=record.ts,
            fbr=sub.meta.fbr,
            collective_targets=assignment.collective_targets if assignment.call_id == record.call_id else None,
        )
        caller.pending.append(entry)
        restored = True
        prompt = assignment_prompt(caller, entry)
        if assignment.call_id == record.call_id and prompt.msg_id not in sub.queue and not ever_recorded(sub, prompt.msg_id):
            sub.queue.put(prompt, with_latest=True)  # the subdialog's queued request did not reach the disk either
            sub.latest.needs_drive = True
            sub.save_latest()
    if restored:
        caller.save_pending()


def note_dispatches_lost_by_a_power_cut(engine: EngineServices, root: RootDialog, dialog: Dialog) -> None:
    """A dispatch recorded in the caller's course without its pending entry, and without its subdialog or
    with a subdialog (a TYPE B session) assigned to another call: a power cut during a group commit can
    leave that (docs/reliability.md, "Limit"), and nothing would ever answer the call. It is reported to the
    model as not delivered, like a tellask cut before its dispatch. (A subdialog assigned to this call got
    its pending entry back: ``restore_pending_entries``.)"""
    noted = {r.call_id for r in dialog.records if isinstance(r, TeammateCallResultRecord)}

    def never_reached(record: SubdialogCreatedRecord) -> bool:
        sub = root.local.get(record.subdialog_id)
        if sub is not None:
            return not sub.load_error  # loaded, and not waited for after the restore: assigned to another call
        return not engine.store.files("run", root.root_id, record.subdialog_id).dir.exists()

    lost = [r for r in unanswered_calls(dialog) if never_reached(r)]
    for record in lost:
        if record.call_id in noted:
            continue  # a collective call: one note answers its call site
        log.warning("dialog %s: call %s was recorded, its dispatch lost; noted as not delivered", dialog.self_id, record.call_id)
        noted.add(record.call_id)
        dialog.append(
            TeammateCallResultRecord(
                ts=now_iso(),
                genseq=record.genseq,
                call_id=record.call_id,
                responder_id="dominds",
                tellask_head=record.tellask_head,
                status="failed",
                result=texts.dominds_note(texts.INTERRUPTED_TELLASK),
            )
        )
    if lost and dialog.can_drive() and not dialog.is_driving:
        dialog.latest.needs_drive = True  # the model reads the note


def complete_dispatches(engine: EngineServices, root: RootDialog, caller: Dialog) -> None:
    pending_before = list(caller.pending)
    supplied = caller.supplied_response_keys()
    for entry in list(caller.pending):
        if entry not in caller.pending:
            continue  # answered with a later call of the same caller to the same session (below)
        if (entry.subdialog_id, entry.call_id) in supplied:
            caller.pending.remove(entry)  # supplied before the crash; only the index update was lost
            continue
        if entry.call_type == "A":
            sup = engine.try_get_dialog(root.root_id, entry.subdialog_id)
            if sup is not None and not sup.is_dead and not any(
                i.from_dialog_id == caller.self_id and i.call_id == entry.call_id for i in sup.latest.inbound_tellask_backs
            ) and f"tb-{caller.self_id}-{entry.call_id}" not in sup.recorded_msg_ids():
                queue_tellask_back(engine, sup, caller, entry.tellask_head, entry.tellask_body, entry.call_id)
            continue  # (one to a dead dialog is failed by recovery.py, never queued in a dialog not driven again)
        sub = root.local.get(entry.subdialog_id)
        sub_files = engine.store.files("run", root.root_id, entry.subdialog_id)
        if sub is None and not sub_files.dialog_yaml.exists():
            if sub_files.dir.exists():
                sub = restore_lost_meta(engine, root, caller, entry)
            else:
                sub = materialize_subdialog(engine, root, caller, entry)
        if entry.call_type == "B" and entry.tellask_session:
            key = f"{entry.agent_id}!{entry.tellask_session}"
            named = root.local.get(root.type_b[key].subdialog_id) if key in root.type_b else None
            # A registry naming a dead subdialog: this call started the session anew (``dispatch``) and the
            # daemon died before the registry named the new one (the next call started yet another).
            if key not in root.type_b or (named is not None and named.is_dead and named.self_id != entry.subdialog_id):
                root.type_b[key] = RegistryEntry(
                    subdialog_id=entry.subdialog_id,
                    agent_id=entry.agent_id,
                    tellask_session=entry.tellask_session,
                    created_at=entry.created_at,
                    last_accessed=now_iso(),
                )
        if sub is None:
            continue
        response = _persisted_answer_for(sub, caller, entry)
        if response is None:
            failure = persisted_failure(sub, entry.call_id)
            if failure is not None:
                record_answers(caller, sub, entry, "failed", "", failure, supplied)
                log.warning("dialog %s: call %s failed (%s) before the daemon died; its failed reply is delivered now", caller.self_id, entry.call_id, failure)
            continue
        # As ``supply_response`` does: this caller's earlier calls to the same session (two TYPE B calls to
        # it in one message) were folded into the one answered and get the same answer. Recovery used to
        # supply only the call ``response.yaml`` names, and the other waited forever.
        record_answers(caller, sub, entry, "completed", response, supplied=supplied)
        if sub.latest.run_state.kind == "interrupted" and sub.latest.run_state.reason in RESUMABLE_REASONS:
            sub.latest.run_state = sub.idle_run_state()  # its answer is delivered: nothing is left to resume
    if caller.pending != pending_before:  # an unchanged index is not rewritten
        caller.save_pending()
    if caller.latest.run_state.kind == "blocked" and caller.can_drive():
        caller.latest.needs_drive = True  # every answer arrived while the daemon was down


def complete_reassignment(root: RootDialog, sub: Dialog) -> None:
    """Finish a TYPE B (re-)tellask cut short between its files, from its intent: the callers' pending entries.

    A tellask to a session writes, in order: the caller's pending entry (the commit point), the session's
    ``dialog.yaml`` (whom it answers next), its queued assignment prompt in ``latest.yaml``, then a failed
    "re-assigned" reply to an earlier caller. The newest unanswered call is the session's current assignment;
    any step after the commit point that is missing is done now, so no caller waits forever and none gets
    the session's old answer for a request that was never delivered.
    """
    waiting = [
        (caller, entry)
        for caller in root.local.values()
        if not caller.load_error
        for entry in caller.pending
        if entry.subdialog_id == sub.self_id
        and entry.call_type == "B"
        and (sub.self_id, entry.call_id) not in caller.supplied_response_keys()
    ]
    if not waiting:
        return
    newest_caller, newest = max(waiting, key=lambda w: w[1].created_at)
    current = sub.meta.assignment_from_sup
    if current is None or current.call_id != newest.call_id or current.caller_dialog_id != newest_caller.self_id:
        log.warning("dialog %s: completing a re-tellask cut short by the crash", sub.self_id)
        sub.meta = sub.meta.model_copy(update={"assignment_from_sup": assignment_of(newest_caller, newest)})
        sub.files.write_meta(sub.meta)
    prompt = assignment_prompt(newest_caller, newest)
    if prompt.msg_id not in sub.queue and not ever_recorded(sub, prompt.msg_id):
        sub.queue.put(prompt, with_latest=True)
        sub.latest.needs_drive = True
        sub.save_latest()
    reason = "the session was re-assigned by a newer tellask; its next answer goes to the newer caller"
    for caller, entry in waiting:
        if caller is newest_caller:
            continue  # the same caller's earlier calls share the answer (supply_response)
        result = texts.failed_response_text(caller.agent_id, sub.agent_id, reason, entry.tellask_head)
        record_response(caller, sub, entry.call_id, "B", entry.tellask_head, "failed", "", result)
        caller.pending.remove(entry)
        caller.save_pending()
        if caller.can_drive():
            caller.latest.needs_drive = True


def ever_recorded(dialog: Dialog, msg_id: str) -> bool:
    """Whether a prompt was recorded in any course of the dialog (a clear_mind may have started a new one)."""
    if msg_id in dialog.recorded_msg_ids():
        return True
    current = dialog.latest.current_course
    for number in dialog.files.course_numbers():
        if number != current and any(
            isinstance(r, HumanTextRecord) and r.msg_id == msg_id for r in dialog.files.read_course(number)
        ):
            return True
    return False


def restore_lost_meta(engine: EngineServices, root: RootDialog, caller: Dialog, entry: PendingSubdialog) -> Dialog | None:
    """A subdialog lost its ``dialog.yaml`` (a hand edit, a bad disk): rebuild it from the caller's entry.

    If its request never reached its course, it is queued again; the tree keeps working either way."""
    files = engine.store.files("run", root.root_id, entry.subdialog_id)
    log.warning("dialog %s: dialog.yaml was missing; rebuilt from its caller's pending entry", entry.subdialog_id)
    files.write_meta(subdialog_meta(root, caller, entry))
    sub = engine.try_load_sub(root, entry.subdialog_id)
    if sub is None or sub.load_error:
        return sub
    sub.notices.append("dialog.yaml was missing; it was rebuilt from the caller's pending entry")
    questions.index_all(engine, sub)
    prompt = assignment_prompt(caller, entry)
    if prompt.msg_id not in sub.queue and not ever_recorded(sub, prompt.msg_id):
        sub.queue.put(prompt, with_latest=True)
        sub.latest.needs_drive = True
        sub.save_latest()
    return sub


def _persisted_answer_for(sub: Dialog, caller: Dialog, entry: PendingSubdialog) -> str | None:
    """The persisted answer to ``entry``, or to a later call of the same caller to the same session (which
    answers ``entry`` too)."""
    response = persisted_answer(sub, entry.call_id)
    if response is not None or entry.call_type == "A":
        return response
    later = [p for p in calls_answered_by(caller, sub) if p is not entry]
    return next((r for p in later if (r := persisted_answer(sub, p.call_id)) is not None), None)


def persisted_failure(sub: Dialog, call_id: str) -> str | None:
    """Why ``sub`` failed the call ``call_id`` for good, when the daemon died before its caller got the failed
    reply: the user declared it dead, or its drive ended interrupted by an error (a provider's refusal) and
    nothing will drive it again unless a person does. Its caller gets the failed reply it would have got
    (``drive._after_drive``, ``run_control.declare_dead``). Recovery used to supply only completed answers,
    and such a caller waited forever."""
    assignment = sub.meta.assignment_from_sup
    if assignment is None or assignment.call_id != call_id:
        return None
    state = sub.latest.run_state
    if state.kind == "dead":
        return texts.declared_dead_reason(state.detail or "")
    if state.kind != "interrupted" or state.reason != "system_stop":
        return None
    if sub.latest.needs_drive or sub.latest.generating or sub.queue or sub.pending or sub.q4h:
        return None  # it goes on (or waits for its own calls or a person): its answer comes from that drive
    return state.detail or "the teammate stopped with an error"


def persisted_answer(sub: Dialog, call_id: str) -> str | None:
    """The answer of a subdialog that finished its drive for ``call_id`` before the daemon died."""
    try:
        response = sub.files.read_response()
    except StoreError:
        response = None
    if response is not None and response.call_id == call_id and response.status == "completed":
        return response.response
    assignment = sub.meta.assignment_from_sup
    if assignment is None or assignment.call_id != call_id or sub.queue:
        return None
    if sub.latest.needs_drive and not nothing_new(sub):
        # A revival with nothing new to read is one written before the answer's generation ran (the
        # daemon died before the drive settled): that generation's words are the answer. Recovery clears
        # such a revival (``recovery._recover_tree``), so waiting for a drive here stranded the caller.
        return None
    if sub.meta.tellask_session and not ever_recorded(sub, assignment_msg_id(call_id, sub.self_id)):
        return None  # the session never read this request: its last saying answers an older one
    if drive_had_ended(sub):
        # Its answer's generation had finished when the daemon died, before the drive settled: recovery used
        # to drive it again with no prompt, and that generation's words went to the caller as the answer.
        return sub.last_saying()
    # ``blocked`` with nothing pending or asked is stale (the drive that answered did not settle): it is idle
    if sub.latest.generating or sub.pending or sub.q4h or sub.latest.run_state.kind not in ("idle", "blocked"):
        return None
    last = sub.records[-1] if sub.records else None
    if isinstance(last, GenFinishRecord) and last.status in ("ok", "truncated"):
        return sub.last_saying()
    return None


def drive_had_ended(dialog: Dialog) -> bool:
    """Whether a dialog interrupted by the daemon (a crash, a shutdown, a full disk) had in fact ended its drive:
    its last generation finished ``ok`` with nothing left to read, and nothing is queued, due, awaited or being
    answered; the daemon died before the drive settled. Resumed, it was driven again with no prompt: a second,
    unasked reply (a subdialog's went to its caller instead of its answer)."""
    state = dialog.latest.run_state
    if state.kind != "interrupted" or state.reason not in RESUMABLE_REASONS or dialog.latest.needs_drive:
        return False
    return nothing_new(dialog)


def nothing_new(dialog: Dialog) -> bool:
    """Nothing for a generation to answer: the last one finished ``ok`` with nothing left to read after it, and
    nothing is queued, awaited, asked or being answered (a drive now would ask the model with no prompt)."""
    latest = dialog.latest
    if latest.generating or latest.inbound_tellask_backs or dialog.queue or dialog.pending or dialog.q4h:
        return False
    last_finish = next((r for r in reversed(dialog.records) if isinstance(r, GenFinishRecord)), None)
    # ``ok`` only: a truncated reply may be continued by the drive (``continue_on_max_tokens``)
    return last_finish is not None and last_finish.status == "ok" and last_generation_finished_quietly(dialog)


def last_generation_finished_quietly(dialog: Dialog) -> bool:
    """The last generation finished ``ok`` with nothing the model still has to read (tools, notes, answers)."""
    records = dialog.records
    start = next((i for i in range(len(records) - 1, -1, -1) if isinstance(records[i], GenStartRecord)), None)
    if start is None:
        return False
    finishes = [r for r in records[start:] if isinstance(r, GenFinishRecord)]
    if not finishes or finishes[0].status not in ("ok", "truncated"):  # truncated: the model ended its turn
        return False  # (`return None` here is an equivalent mutant: its callers test truthiness)
    unread = FuncResultRecord | TellaskCallRecord | TeammateCallResultRecord | SubdialogCreatedRecord | TeammateResponseRecord
    return not any(isinstance(r, unread) for r in records[start:])
