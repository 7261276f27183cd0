"""Reconcile ``.dialogs/run/`` at daemon start (DESIGN §5, reference §3.10 with its gaps fixed).

For every dialog that was mid-flight when the daemon died:
- a generation without its finish record is closed as interrupted;
- a function call without a result gets an "interrupted, may or may not have run" result (never re-run);
- a tellask written by the model but never dispatched gets a note saying it was not delivered;
- the run state becomes ``blocked`` (pending Q4H or subdialogs) or ``interrupted{server_restart}``,
  and unless ``--no-resume`` the interrupted ones are driven again.
Half-finished dispatches are completed from the caller's pending index (the commit point): a missing
subdialog is created, a missing registry key is added, an ask-back never queued is queued, an answer
already persisted but not supplied is supplied, and a supplied one is not supplied again (``recovery_calls.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from dominds.dialog.model import Dialog, RootDialog
from dominds.driver import questions, texts
from dominds.driver.attention import RESUMABLE_REASONS, tree_at_rest
from dominds.driver.drive import answer_of, settled_obligation, start_new_course
from dominds.driver.recovery_calls import (
    complete_dispatches,
    complete_reassignment,
    drive_had_ended,
    last_generation_finished_quietly,
    note_dispatches_lost_by_a_power_cut,
    nothing_new,
    restore_pending_entries,
    stop_reason_to_keep,
)
from dominds.driver.services import EngineServices
from dominds.driver.start_progress import StartProgress
from dominds.driver.subdialogs import (
    runtime_call_id,
)
from dominds.driver.supply import calls_answered_by, close_ask_back, record_ask_back_answer
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
    TellaskCallRecord,
)
from dominds.store.dialog_store import remove_creation_leftovers
from dominds.store.errors import StoreError, WriteFailedError, storage_pause
from dominds.store.index_entries import Entry
from dominds.store.records import InboundTellaskBack, RunState
from dominds.tellask import parse_segments
from dominds.tellask_events import TellaskCall

log = logging.getLogger("dominds.recovery")


def recover(
    engine: EngineServices, progress: StartProgress | None = None, on_write_refused: Callable[[str, str], None] | None = None
) -> int:
    """Reconcile every tree of ``run/`` that may have been mid-flight; the others are not even loaded.

    Which trees need a look comes from the dialog index (``store/index.py``: facts checked against the
    files, so a big idle workspace starts without reading every ``latest.yaml``). Trees recovery loaded
    and that have nothing to drive are unloaded again (memory does not grow with dialogs at rest) and
    noted as settled, as are the trees found at rest without loading them: while their files hold the
    same bytes, the next start neither loads them nor reads their facts (a tree waiting for a person or
    a teammate is such a tree). The log says how many trees were loaded; returns how many trees of
    ``run/`` it went through. A tree whose reconciliation the disk refused (full) is handed to
    ``on_write_refused(rootId, problem)``: the engine recovers it again once writes succeed."""
    remove_creation_leftovers(engine.rtws.run_dir)
    stale = looked_at = loaded = 0
    at_rest: list[tuple[str, str, str]] = []
    for tree in engine.index.iter_trees(("run",)):
        looked_at += 1
        if progress is not None:
            progress.tick(looked_at)
        entries = tree.entries
        if not tree.settled:
            # A settled tree's directories are as the start that settled it left them (their mtimes are in
            # its signature, and a temp file is a new directory entry), and that start removed its temps:
            # reading every dialog's facts to find none cost a 10,000-dialog restart 1.3 of its 3.1 s.
            stale += sum(_remove_stray_temps(engine, e) for e in entries)
        if tree_at_rest(tree):
            # At rest, and untouched since the daemon left it so: nothing to reconcile, nothing to load.
            for entry in entries:
                for question in entry.facts.get("q4h") or () if "q4h.yaml" in entry.files else ():
                    engine.q4h_index[str(question.get("id"))] = (entry.root_id, entry.self_id)
            if not tree.settled:  # found at rest: the next start need not even read its facts
                at_rest.append(("run", tree.root.root_id, tree.sig))
            continue
        root_id = tree.root.root_id
        try:
            loaded += recover_root(engine, root_id)
        except WriteFailedError as exc:  # a full disk: recovered again once it takes writes (storage_watch.py)
            loaded += 1
            log.error("recovery of %s waits for the disk to take writes: %s", root_id, exc)
            if on_write_refused is not None:
                on_write_refused(root_id, str(exc))
        except StoreError as exc:  # one broken tree must not stop the daemon
            loaded += 1
            log.error("recovery of %s failed: %s", root_id, exc)
    engine.index.note_settled(at_rest)
    if progress is not None:
        progress.finish(looked_at)
    if stale:
        log.info("removed %d temp files left by interrupted writes", stale)
    log.info("recovery: %d of %d trees in run/ loaded (the others were settled or had nothing to reconcile)", loaded, looked_at)
    return looked_at


def recover_root(engine: EngineServices, root_id: str) -> int:
    """Load one tree of ``run/`` from its files and reconcile it; 1 if it was loaded. A copy already in memory
    is forgotten first: it is half reconciled when a refused write cut its recovery (``recover_again``).
    A ``StoreError`` of the reconciliation leaves the tree marked with it and is raised."""
    stale = engine.roots.pop(root_id, None)
    if stale is not None:
        engine.fetched_at.pop(root_id, None)
    # A subdialog creation cut short has a pending entry in its caller, so its tree is here.
    remove_creation_leftovers(engine.store.root_dir("run", root_id) / "subdialogs")
    try:
        root = engine.load_root(root_id)
    except StoreError as exc:  # its dialog.yaml is gone: the listing flags it, the daemon starts
        log.error("dialog %s cannot be loaded: %s", root_id, exc)
        return 0
    if root.load_error:
        log.error("dialog %s: %s", root_id, root.load_error)
        return 1
    for sub_id in engine.store.subdialog_ids("run", root_id):
        engine.try_load_sub(root, sub_id)
    try:
        _recover_tree(engine, root)
    except WriteFailedError as exc:
        for dialog in root.local.values():  # none is driven from this half-reconciled copy
            dialog.load_error = dialog.load_error or storage_pause(exc)
        raise
    except StoreError as exc:
        root.load_error = str(exc)
        raise
    engine.unload_if_at_rest(root_id)  # at once: thousands of waiting trees never sit in memory together
    return 1


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
        answered = _drop_answered_questions(engine, dialog)
        if dialog.is_dead:  # declared dead just before the crash: its questions and queued prompts go too
            if dialog.q4h:
                questions.clear_all(engine, dialog)
            dialog.queue.clear()
        if (
            dialog.latest.generating
            or dialog.latest.run_state.kind in ("proceeding", "stop_requested")
            or _has_open_generation(dialog)
        ):
            close_interrupted_generation(dialog, answered)
        if dialog.pending_new_course:  # clear_mind ran, its new course did not start before the crash
            start_new_course(engine, dialog, reason="clear_mind")  # queues its prompt: the dialog is driven
    for dialog in list(root.local.values()):
        if not dialog.load_error:
            restore_pending_entries(root, dialog)
    for sub in list(root.local.values()):
        if not sub.is_root and sub.meta.tellask_session and not sub.load_error and not sub.is_dead:
            complete_reassignment(root, sub)
    for dialog in list(root.local.values()):
        if not dialog.load_error:
            complete_dispatches(engine, root, dialog)
            note_dispatches_lost_by_a_power_cut(engine, root, dialog)
    for dialog in list(root.local.values()):
        if dialog.load_error:
            continue
        if dialog.is_dead:
            _withdraw_ask_backs_of_the_dead(root, dialog)
            _fail_ask_backs_to_the_dead(root, dialog)
        else:  # a dead dialog's last saying answers nothing (it used to be delivered as the answer)
            _answer_finished_ask_back(engine, dialog)
    if root.type_b != registry_before:
        root.save_registry()
    # A workflow run's steps are driven for the workflow code that awaits their answers, and that code
    # died with the process: a step revived here would answer nobody (spending tokens, and racing a
    # resumed run that retires it and asks again). The run reads interrupted until its workflow resumes it.
    workflow_run = bool(root.meta.conductor)
    for dialog in list(root.local.values()):
        if dialog.load_error:
            continue
        if dialog.latest.run_state.kind == "interrupted" and dialog.latest.run_state.reason in RESUMABLE_REASONS:
            if drive_had_ended(dialog) and not workflow_run:
                dialog.latest.run_state = dialog.idle_run_state()  # nothing to resume: it had answered
            elif engine.resume_on_start and dialog.can_drive() and not workflow_run:
                dialog.latest.needs_drive = True
        if dialog.latest.run_state.kind in ("idle", "blocked"):
            dialog.latest.run_state = dialog.idle_run_state()
        if dialog.queue and not workflow_run:
            dialog.latest.needs_drive = True
        elif dialog.latest.needs_drive and dialog.latest.run_state.kind == "idle" and nothing_new(dialog) and not _awaited(root, dialog):
            # A revival written just before the daemon died, for a message whose queue line it never wrote
            # (``intake.queue_durably`` writes needsDrive first): a drive would ask the model with no prompt.
            # Not for a subdialog its caller still waits for: its drive is what answers (complete_dispatches
            # delivers a finished answer before this; clearing the revival of one it missed stranded the caller).
            dialog.latest.needs_drive = False
        if dialog.latest != latest_before.get(dialog.self_id):  # unchanged files are not rewritten
            dialog.save_latest()
        if dialog.latest.needs_drive and not workflow_run:
            engine.want(dialog)


def _awaited(root: RootDialog, dialog: Dialog) -> bool:
    """Whether ``dialog``'s caller still waits for its answer (a pending entry for it)."""
    assignment = dialog.meta.assignment_from_sup
    caller = root.local.get(assignment.caller_dialog_id) if assignment is not None else None
    return caller is not None and bool(calls_answered_by(caller, dialog))


def _withdraw_ask_backs_of_the_dead(root: RootDialog, dead: Dialog) -> None:
    """An ask-back a dead subdialog waited for will never be read: withdrawn from the asked dialog, as
    ``run_control.declare_dead`` does after writing the dialog's state (the daemon may die in between)."""
    for entry in [p for p in dead.pending if p.call_type == "A"]:
        asked = root.local.get(entry.subdialog_id)
        if asked is None or asked.load_error:
            continue
        kept = [i for i in asked.latest.inbound_tellask_backs if i.from_dialog_id != dead.self_id]
        if kept != asked.latest.inbound_tellask_backs:
            asked.latest.inbound_tellask_backs = kept  # saved with the other reconciled latest.yaml files below


def _fail_ask_backs_to_the_dead(root: RootDialog, dead: Dialog) -> None:
    """An ask-back made to a dead dialog is never answered: its asker gets the failed reply that
    ``run_control.declare_dead`` gives (the daemon may die before), and the dead dialog's obligations go."""
    reason = texts.declared_dead_reason(dead.latest.run_state.detail or "")
    for asker in list(root.local.values()):
        if asker.load_error or asker is dead:
            continue
        for entry in [p for p in asker.pending if p.call_type == "A" and p.subdialog_id == dead.self_id]:
            inbound = InboundTellaskBack(from_dialog_id=asker.self_id, call_id=entry.call_id, tellask_head=entry.tellask_head)
            record_ask_back_answer(asker, dead, inbound, "", failure_reason=reason)
            if asker.can_drive():
                asker.latest.needs_drive = True  # saved with the other reconciled latest.yaml files below
    dead.latest.inbound_tellask_backs = []


def _drop_answered_questions(engine: EngineServices, dialog: Dialog) -> set[str]:
    """A queued answer whose question is still indexed: the daemon died between the two writes. Returns
    the call ids of the questions dropped: those calls were delivered (and are answered)."""
    answered = {p.question_id for p in dialog.queue if p.question_id}
    answered |= {r.question_id for r in dialog.records if isinstance(r, HumanTextRecord) and r.question_id}
    dropped = [question for question in dialog.q4h if question.id in answered]
    for question in dropped:
        dialog.q4h.remove(question)
        engine.q4h_index.pop(question.id, None)
    if dropped:  # an unchanged file is not rewritten (a rewrite would make the tree look touched)
        dialog.save_q4h()
    return {question.call_id for question in dropped if question.call_id}


def _has_open_generation(dialog: Dialog) -> bool:
    """A generation start without its finish (latest.yaml may not have been saved yet when the daemon died)."""
    for record in reversed(dialog.records):
        if isinstance(record, GenFinishRecord):
            return False
        if isinstance(record, GenStartRecord):
            return True
    return False


def close_interrupted_generation(dialog: Dialog, answered: set[str] | frozenset[str] = frozenset()) -> None:
    """Close the dialog's open generations as interrupted; ``answered``: call ids of questions to the
    person whose answers are in (their questions were dropped just before): delivered calls."""
    records = dialog.records
    results = {(r.genseq, r.id) for r in records if isinstance(r, FuncResultRecord)}  # ids repeat across replies
    finished = {r.genseq for r in records if isinstance(r, GenFinishRecord)}
    open_gens = [r.genseq for r in records if isinstance(r, GenStartRecord) and r.genseq not in finished]
    for record in list(records):
        if isinstance(record, FuncCallRecord) and (record.genseq, record.id) not in results:
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
        _note_undelivered_tellasks(dialog, genseq, answered)
        dialog.append(GenFinishRecord(ts=now_iso(), genseq=genseq, status="interrupted", error="server_restart"))
    dialog.latest.generating = False
    state = dialog.latest.run_state
    if state.kind == "dead":
        return  # declared dead while it generated (run_control.declare_dead): it stays dead, never resumed
    reason = dialog.blocked_reason()
    if kept := stop_reason_to_keep(state):
        # A Stop answered before its drive recorded the end (or recorded while a full disk had paused the
        # drive): the dialog stays stopped as the person asked, as ``drive._settle`` would have left it (it
        # used to be resumed as interrupted by the restart).
        dialog.latest.needs_drive = False
        dialog.latest.run_state = RunState(kind="interrupted", reason=kept)
        dialog.append(RunMarkerRecord(ts=now_iso(), kind="interrupted", reason=kept))
    elif reason:
        dialog.latest.run_state = RunState(kind="blocked", reason=reason)
    else:
        dialog.latest.run_state = RunState(kind="interrupted", reason="server_restart")
        dialog.append(RunMarkerRecord(ts=now_iso(), kind="interrupted", reason="server_restart"))


def _note_undelivered_tellasks(dialog: Dialog, genseq: int, answered: set[str] | frozenset[str]) -> None:
    handled = {r.call_id for r in dialog.records if isinstance(r, TeammateCallResultRecord | SubdialogCreatedRecord | TeammateResponseRecord)}
    # a question to the person whose answer is in was dropped from ``q4h`` just before: it was delivered
    handled |= {p.call_id for p in dialog.pending} | {q.call_id for q in dialog.q4h} | answered
    course = dialog.latest.current_course
    segment = 0
    for record in list(dialog.records):
        if isinstance(record, TellaskCallRecord) and record.genseq == genseq and record.call_id not in handled:
            note = TeammateCallResultRecord(
                ts=now_iso(),
                genseq=genseq,
                call_id=record.call_id,
                responder_id="dominds",
                tellask_head=record.tellask_head,
                status="failed",
                result=texts.dominds_note(texts.INTERRUPTED_TELLASK),
            )
            dialog.append(note)  # the tool-form call's result (messages.py)
            continue
        if not isinstance(record, AgentWordsRecord) or record.genseq != genseq:
            continue
        segment += 1
        if record.plain:
            continue  # written in tool form: its `!?@` lines were never calls
        for seg in parse_segments(record.content):
            if not isinstance(seg, TellaskCall):
                continue
            call_id = runtime_call_id(seg.call_id, course, genseq, segment)
            if call_id in handled:
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


def _answer_finished_ask_back(engine: EngineServices, dialog: Dialog) -> None:
    """The dialog had finished its answer to an ask-back when the daemon died, before it was delivered.

    Deliver that answer now instead of generating a second one (which would also not be *the* answer).
    """
    serving = settled_obligation(dialog)
    if serving is None or not last_generation_finished_quietly(dialog):
        return
    asker = engine.try_get_dialog(dialog.root_id, serving.from_dialog_id)
    if asker is not None:
        record_ask_back_answer(asker, dialog, serving, answer_of(dialog))
        if asker.can_drive():
            asker.latest.needs_drive = True
            # At once, before the server's obligation is closed below. Without a crash here the end of
            # _recover_tree would save it too (every changed latest.yaml is): a sampled mutant removing
            # this call survives for that reason; it only narrows a crash window during recovery.
            asker.save_latest()
    close_ask_back(dialog, serving)
    if dialog.latest.run_state.kind == "interrupted" and dialog.latest.run_state.reason in RESUMABLE_REASONS:
        dialog.latest.run_state = dialog.idle_run_state()
