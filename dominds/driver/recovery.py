"""Reconcile ``.dialogs/run/`` at daemon start (DESIGN §5, reference §3.10 with its gaps fixed).

For every dialog that was mid-flight when the daemon died:
- a generation without its finish record is closed as interrupted;
- a function call without a result gets an "interrupted, may or may not have run" result (never re-run);
- a tellask written by the model but never dispatched gets a note saying it was not delivered;
- the run state becomes ``blocked`` (pending Q4H or subdialogs) or ``interrupted{server_restart}``,
  and unless ``--no-resume`` the interrupted ones are driven again.
Half-finished dispatches are completed from the caller's pending index (the commit point): a missing
subdialog is created, a missing registry key is added, an ask-back never queued is queued, an answer
already persisted but not supplied is supplied, and a supplied one is not supplied again.
"""

from __future__ import annotations

import contextlib
import logging

from dominds.dialog.model import Dialog, RootDialog
from dominds.driver import questions, texts
from dominds.driver.drive import answer_of, settled_obligation, start_new_course
from dominds.driver.services import EngineServices
from dominds.driver.subdialogs import (
    assignment_msg_id,
    assignment_of,
    assignment_prompt,
    materialize_subdialog,
    runtime_call_id,
    subdialog_meta,
)
from dominds.driver.supply import close_ask_back, record_ask_back_answer, record_response
from dominds.driver.tellask_exec import queue_tellask_back
from dominds.ids import now_iso
from dominds.store.course_records import (
    AgentWordsRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    RunMarkerRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
)
from dominds.store.dialog_store import remove_creation_leftovers
from dominds.store.errors import StoreError
from dominds.store.index import Entry, Facts
from dominds.store.records import PendingSubdialog, RegistryEntry, RunState
from dominds.tellask import parse_segments
from dominds.tellask_events import TellaskCall

log = logging.getLogger("dominds.recovery")

RESUMABLE_REASONS = frozenset({"server_restart", "server_shutdown"})
"""Interruptions no person asked for: a crash, a graceful daemon stop, or an earlier ``--no-resume`` start.
Dialogs a user stopped (``user_stop``, ``emergency_stop``) stay stopped."""


def recover(engine: EngineServices) -> None:
    """Reconcile every tree of ``run/`` that may have been mid-flight; the others are not even loaded.

    Which trees need a look comes from the dialog index (``store/index.py``: facts checked against the
    files, so a big idle workspace starts without reading every ``latest.yaml``). Trees recovery loaded
    and that have nothing to drive are unloaded again (memory does not grow with dialogs at rest) and
    noted as settled: while their files stay exactly so, the next start does not load them either (a
    tree waiting for a person or a teammate is such a tree)."""
    remove_creation_leftovers(engine.rtws.run_dir)
    stale = 0
    for tree in engine.index.iter_trees(("run",)):
        entries = tree.entries
        stale += sum(_remove_stray_temps(engine, e) for e in entries)
        if tree.settled or not any(needs_attention(e.facts) for e in entries):
            # At rest, and untouched since the daemon left it so: nothing to reconcile, nothing to load.
            for entry in entries:
                for question in entry.facts.get("q4h") or () if "q4h.yaml" in entry.files else ():
                    engine.q4h_index[str(question.get("id"))] = (entry.root_id, entry.self_id)
            continue
        root_id = tree.root.root_id
        # A subdialog creation cut short has a pending entry in its caller, so its tree is here.
        remove_creation_leftovers(engine.store.root_dir("run", root_id) / "subdialogs")
        root = engine.load_root(root_id)
        if root.load_error:
            log.error("dialog %s: %s", root_id, root.load_error)
            continue
        for sub_id in engine.store.subdialog_ids("run", root_id):
            engine.try_load_sub(root, sub_id)
        try:
            _recover_tree(engine, root)
        except StoreError as exc:  # one broken tree must not stop the daemon
            log.error("recovery of %s failed: %s", root_id, exc)
            root.load_error = str(exc)
        if engine.unload_if_at_rest(root_id):  # at once: thousands of waiting trees never sit in memory together
            engine.index.settle("run", root_id)
    if stale:
        log.info("removed %d temp files left by interrupted writes", stale)


def _remove_stray_temps(engine: EngineServices, entry: Entry) -> int:
    """Temp files of atomic writes a kill interrupted (the index notes them when it reads a directory)."""
    if not entry.facts.get("strayTemps"):
        return 0
    directory = engine.store.files(entry.status, entry.root_id, entry.self_id).dir
    removed = 0
    for name in entry.facts["strayTemps"]:
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
            removed += 1
    return removed


def needs_attention(facts: Facts) -> bool:
    """Whether a dialog may have been mid-flight (or is corrupt), from its index facts alone."""
    files = facts.get("files") or ()
    if "q4h.yaml" in files or "subdlg.yaml" in files or "latest.yaml" not in files or facts.get("error"):
        return True
    if facts.get("generating") or facts.get("needsDrive") or facts.get("queuedPrompts"):
        return True
    run_state = facts.get("runState") or {}
    kind = run_state.get("kind")
    if kind in ("proceeding", "stop_requested", "error"):
        return True
    if kind == "interrupted" and run_state.get("reason") in RESUMABLE_REASONS:
        return True
    if kind == "blocked":
        # Blocked with no index file left: the answer that unblocked it arrived, but the daemon died
        # before its revival (needsDrive) was saved. Without this it would wait forever.
        return True
    return bool(facts.get("inboundTellaskBacks"))


def _recover_tree(engine: EngineServices, root: RootDialog) -> None:
    registry_before = dict(root.type_b)
    for entry_key, entry in list(root.type_b.items()):
        if entry.locked:
            root.type_b[entry_key] = entry.model_copy(update={"locked": False})
    dialogs = list(root.local.values())
    latest_before = {d.self_id: d.latest.model_copy(deep=True) for d in dialogs}
    for dialog in dialogs:
        if dialog.load_error:
            dialog.latest.run_state = RunState(kind="error", detail=dialog.load_error)
            continue
        questions.index_all(engine, dialog)
        _drop_answered_questions(engine, dialog)
        if (
            dialog.latest.generating
            or dialog.latest.run_state.kind in ("proceeding", "stop_requested")
            or _has_open_generation(dialog)
        ):
            close_interrupted_generation(dialog)
        if dialog.pending_new_course:  # clear_mind ran, its new course did not start before the crash
            start_new_course(engine, dialog, reason="clear_mind")  # queues its prompt: the dialog is driven
    for sub in list(root.local.values()):
        if not sub.is_root and sub.meta.tellask_session and not sub.load_error and not sub.is_dead:
            _complete_reassignment(root, sub)
    for dialog in list(root.local.values()):
        if not dialog.load_error:
            _complete_dispatches(engine, root, dialog)
    for dialog in list(root.local.values()):
        if not dialog.load_error:
            _answer_finished_ask_back(engine, dialog)
    if root.type_b != registry_before:
        root.save_registry()
    for dialog in list(root.local.values()):
        if dialog.load_error:
            continue
        if dialog.latest.run_state.kind == "interrupted" and dialog.latest.run_state.reason in RESUMABLE_REASONS:
            if engine.resume_on_start and dialog.can_drive():
                dialog.latest.needs_drive = True
        if dialog.latest.run_state.kind in ("idle", "blocked"):
            dialog.latest.run_state = dialog.idle_run_state()
        if dialog.latest.queued_prompts:
            dialog.latest.needs_drive = True
        if dialog.latest != latest_before.get(dialog.self_id):  # unchanged files are not rewritten
            dialog.save_latest()
        if dialog.latest.needs_drive:
            engine.want(dialog)


def _drop_answered_questions(engine: EngineServices, dialog: Dialog) -> None:
    """A queued answer whose question is still indexed: the daemon died between the two writes."""
    answered = {p.question_id for p in dialog.latest.queued_prompts if p.question_id}
    answered |= {r.question_id for r in dialog.records if isinstance(r, HumanTextRecord) and r.question_id}
    dropped = False
    for question in list(dialog.q4h):
        if question.id in answered:
            dialog.q4h.remove(question)
            engine.q4h_index.pop(question.id, None)
            dropped = True
    if dropped:  # an unchanged file is not rewritten (a rewrite would make the tree look touched)
        dialog.save_q4h()


def _has_open_generation(dialog: Dialog) -> bool:
    """A generation start without its finish (latest.yaml may not have been saved yet when the daemon died)."""
    for record in reversed(dialog.records):
        if isinstance(record, GenFinishRecord):
            return False
        if isinstance(record, GenStartRecord):
            return True
    return False


def close_interrupted_generation(dialog: Dialog) -> None:
    records = dialog.records
    results = {r.id for r in records if isinstance(r, FuncResultRecord)}
    finished = {r.genseq for r in records if isinstance(r, GenFinishRecord)}
    open_gens = [r.genseq for r in records if isinstance(r, GenStartRecord) and r.genseq not in finished]
    for record in list(records):
        if isinstance(record, FuncCallRecord) and record.id not in results:
            dialog.append(
                FuncResultRecord(
                    ts=now_iso(),
                    genseq=record.genseq,
                    id=record.id,
                    name=record.name,
                    content=texts.INTERRUPTED_TOOL_RESULT,
                    is_error=True,
                    interrupted=True,
                )
            )
    for genseq in open_gens:
        _note_undelivered_tellasks(dialog, genseq)
        dialog.append(GenFinishRecord(ts=now_iso(), genseq=genseq, status="interrupted", error="server_restart"))
    dialog.latest.generating = False
    reason = dialog.blocked_reason()
    if reason:
        dialog.latest.run_state = RunState(kind="blocked", reason=reason)
    else:
        dialog.latest.run_state = RunState(kind="interrupted", reason="server_restart")
        dialog.append(RunMarkerRecord(ts=now_iso(), kind="interrupted", reason="server_restart"))


def _note_undelivered_tellasks(dialog: Dialog, genseq: int) -> None:
    handled = {r.call_id for r in dialog.records if isinstance(r, TeammateCallResultRecord | SubdialogCreatedRecord | TeammateResponseRecord)}
    handled |= {p.call_id for p in dialog.pending} | {q.call_id for q in dialog.q4h}
    course = dialog.latest.current_course
    segment = 0
    for record in list(dialog.records):
        if not isinstance(record, AgentWordsRecord) or record.genseq != genseq:
            continue
        segment += 1
        for seg in parse_segments(record.content):
            if not isinstance(seg, TellaskCall):
                continue
            call_id = runtime_call_id(seg.call_id, course, genseq, segment)
            if call_id in handled or seg.first_mention == "human" and any(q.call_id == call_id for q in dialog.q4h):
                continue
            dialog.append(
                TeammateCallResultRecord(
                    ts=now_iso(),
                    genseq=genseq,
                    call_id=call_id,
                    responder_id="dominds",
                    tellask_head=seg.headline,
                    status="failed",
                    result=texts.dominds_note(texts.INTERRUPTED_TELLASK),
                )
            )


def _complete_dispatches(engine: EngineServices, root: RootDialog, caller: Dialog) -> None:
    pending_before = list(caller.pending)
    supplied = caller.supplied_response_keys()
    for entry in list(caller.pending):
        if (entry.subdialog_id, entry.call_id) in supplied:
            caller.pending.remove(entry)  # supplied before the crash; only the index update was lost
            continue
        if entry.call_type == "A":
            sup = engine.try_get_dialog(root.root_id, entry.subdialog_id)
            if sup is not None and not any(
                i.from_dialog_id == caller.self_id and i.call_id == entry.call_id for i in sup.latest.inbound_tellask_backs
            ) and f"tb-{caller.self_id}-{entry.call_id}" not in sup.recorded_msg_ids():
                queue_tellask_back(engine, sup, caller, entry.tellask_head, entry.tellask_body, entry.call_id)
            continue
        sub = root.local.get(entry.subdialog_id)
        sub_files = engine.store.files("run", root.root_id, entry.subdialog_id)
        if sub is None and not sub_files.dialog_yaml.exists():
            if sub_files.dir.exists():
                sub = _restore_lost_meta(engine, root, caller, entry)
            else:
                sub = materialize_subdialog(engine, root, caller, entry)
        if entry.call_type == "B" and entry.tellask_session:
            key = f"{entry.agent_id}!{entry.tellask_session}"
            if key not in root.type_b:
                root.type_b[key] = RegistryEntry(
                    subdialog_id=entry.subdialog_id,
                    agent_id=entry.agent_id,
                    tellask_session=entry.tellask_session,
                    created_at=entry.created_at,
                    last_accessed=now_iso(),
                )
        if sub is None:
            continue
        response = _persisted_answer(sub, entry.call_id)
        if response is not None:
            result = texts.response_text(caller.agent_id, sub.agent_id, response, entry.tellask_head, fbr=sub.meta.fbr)
            record_response(caller, sub, entry.call_id, entry.call_type, entry.tellask_head, "completed", response, result)
            caller.pending.remove(entry)
    if caller.pending != pending_before:  # an unchanged index is not rewritten
        caller.save_pending()
    if caller.latest.run_state.kind == "blocked" and caller.can_drive():
        caller.latest.needs_drive = True  # every answer arrived while the daemon was down


def _complete_reassignment(root: RootDialog, sub: Dialog) -> None:
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
    if not any(p.msg_id == prompt.msg_id for p in sub.latest.queued_prompts) and not _ever_recorded(sub, prompt.msg_id):
        sub.latest.queued_prompts.append(prompt)
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


def _ever_recorded(dialog: Dialog, msg_id: str) -> bool:
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


def _answer_finished_ask_back(engine: EngineServices, dialog: Dialog) -> None:
    """The dialog had finished its answer to an ask-back when the daemon died, before it was delivered.

    Deliver that answer now instead of generating a second one (which would also not be *the* answer).
    """
    serving = settled_obligation(dialog)
    if serving is None or not _last_generation_finished_quietly(dialog):
        return
    asker = engine.try_get_dialog(dialog.root_id, serving.from_dialog_id)
    if asker is not None:
        record_ask_back_answer(asker, dialog, serving, answer_of(dialog))
        if asker.can_drive():
            asker.latest.needs_drive = True
            asker.save_latest()
    close_ask_back(dialog, serving)
    if dialog.latest.run_state.kind == "interrupted" and dialog.latest.run_state.reason in RESUMABLE_REASONS:
        dialog.latest.run_state = dialog.idle_run_state()


def _last_generation_finished_quietly(dialog: Dialog) -> bool:
    """The last generation finished ``ok`` with nothing the model still has to read (tools, notes, answers)."""
    records = dialog.records
    start = next((i for i in range(len(records) - 1, -1, -1) if isinstance(records[i], GenStartRecord)), None)
    if start is None:
        return False
    finishes = [r for r in records[start:] if isinstance(r, GenFinishRecord)]
    if not finishes or finishes[0].status not in ("ok", "truncated"):  # truncated: the model ended its turn
        return False
    unread = FuncResultRecord | TeammateCallResultRecord | SubdialogCreatedRecord | TeammateResponseRecord
    return not any(isinstance(r, unread) for r in records[start:])


def _restore_lost_meta(engine: EngineServices, root: RootDialog, caller: Dialog, entry: PendingSubdialog) -> Dialog | None:
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
    if not any(p.msg_id == prompt.msg_id for p in sub.latest.queued_prompts) and not _ever_recorded(sub, prompt.msg_id):
        sub.latest.queued_prompts.append(prompt)
        sub.latest.needs_drive = True
        sub.save_latest()
    return sub


def _persisted_answer(sub: Dialog, call_id: str) -> str | None:
    """The answer of a subdialog that finished its drive for ``call_id`` before the daemon died."""
    try:
        response = sub.files.read_response()
    except StoreError:
        response = None
    if response is not None and response.call_id == call_id and response.status == "completed":
        return response.response
    assignment = sub.meta.assignment_from_sup
    if assignment is None or assignment.call_id != call_id or sub.latest.needs_drive or sub.latest.queued_prompts:
        return None
    if sub.meta.tellask_session and not _ever_recorded(sub, assignment_msg_id(call_id, sub.self_id)):
        return None  # the session never read this request: its last saying answers an older one
    if sub.latest.generating or sub.pending or sub.q4h or sub.latest.run_state.kind != "idle":
        return None
    last = sub.records[-1] if sub.records else None
    if isinstance(last, GenFinishRecord) and last.status in ("ok", "truncated"):
        return sub.last_saying()
    return None
