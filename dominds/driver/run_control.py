"""Run control: stop, emergency stop, resume, declare dead, supersede, and moving roots between lists.

Every run-state change is persisted and then published (``Dialog.set_run_state``).
"""

from __future__ import annotations

from dominds.dialog.model import Dialog, RootDialog
from dominds.driver import questions, texts
from dominds.driver.errors import EngineError
from dominds.driver.services import EngineServices
from dominds.driver.supply import answer_tellask_back, supply_response
from dominds.rtws import DIALOG_STATUSES
from dominds.store.errors import is_storage_pause
from dominds.store.records import Assignment, RunState


def stop(engine: EngineServices, dialog: Dialog, reason: str = "user_stop") -> bool:
    """Stop a dialog and everything working for it (idempotent): its drive, and the drives of the
    subdialogs it waits on, transitively ("Stop stops everything", DESIGN §4.9). A dialog only queued
    for driving is interrupted before it starts. A dialog that was not driving itself but waited on
    work that this stopped is marked ``interrupted`` too, so its Continue resumes that work
    (``resume``)."""
    stopped_self = _stop_one(engine, dialog, reason)
    stopped_under = stop_under(engine, dialog, reason)
    if stopped_under and not stopped_self and dialog.latest.run_state.kind == "blocked" and not dialog.is_driving:
        dialog.set_run_state(RunState(kind="interrupted", reason=reason))
    return stopped_self or stopped_under > 0


def _stop_one(engine: EngineServices, dialog: Dialog, reason: str) -> bool:
    if dialog.is_driving:
        if dialog.stop_reason is None:
            dialog.set_run_state(RunState(kind="stop_requested", reason=reason))
        engine.request_stop(dialog, reason)
        return True
    if (dialog.latest.needs_drive or is_storage_pause(dialog.load_error)) and not dialog.is_dead:
        # queued for a drive, or paused by a full disk that the storage watcher would resume
        _persist_stop(dialog, reason)
        return True
    return False


def _persist_stop(dialog: Dialog, reason: str) -> None:
    """The dialog stays stopped, on disk before the Stop is answered. A refused write (a full disk) leaves
    it as it was, so a Stop answered with an error has no effect: the storage watcher would otherwise keep
    a stop that exists only in memory, and a restart would forget it."""
    needs_drive, state = dialog.latest.needs_drive, dialog.latest.run_state
    dialog.latest.needs_drive = False
    try:
        dialog.set_run_state(RunState(kind="interrupted", reason=reason), save=False)
        dialog.save_latest()
    except BaseException:
        dialog.latest.needs_drive, dialog.latest.run_state = needs_drive, state
        raise


def working_for(engine: EngineServices, dialog: Dialog) -> list[Dialog]:
    """The loaded subdialogs ``dialog`` waits on (TYPE B and C calls, not the ask-backs it waits on: the
    dialog it asked back works for someone else), then theirs, transitively; each once."""
    found: dict[str, Dialog] = {}
    waiting = [dialog]
    while waiting:
        caller = waiting.pop()
        for entry in caller.pending:
            if entry.call_type == "A" or entry.subdialog_id in found or entry.subdialog_id == dialog.self_id:
                continue
            sub = engine.try_get_dialog(caller.root_id, entry.subdialog_id)
            if sub is not None and not sub.is_dead:
                found[sub.self_id] = sub
                waiting.append(sub)
    return list(found.values())


def stop_under(engine: EngineServices, dialog: Dialog, reason: str) -> int:
    """Stop every subdialog working for ``dialog``; how many were stopped."""
    return sum(_stop_one(engine, sub, reason) for sub in working_for(engine, dialog))


def emergency_stop(engine: EngineServices) -> int:
    count = 0
    for root in list(engine.roots.values()):
        for dialog in list(root.local.values()):
            if dialog.is_driving or dialog.latest.needs_drive or is_storage_pause(dialog.load_error):
                count += stop(engine, dialog, "emergency_stop")
    return count


def resume(engine: EngineServices, dialog: Dialog) -> bool:
    """Drive an interrupted dialog again: True. A dialog already proceeding (the daemon resumed it after a
    restart, or another client did) is left alone: False, not an error, so a resume that races the
    daemon's own never fails. Any other state has nothing to resume (EngineError). The interrupted
    subdialogs it waits on are resumed with it: Continue undoes what its Stop stopped (``stop``)."""
    kind = dialog.latest.run_state.kind
    if kind == "proceeding" or (kind == "interrupted" and dialog.is_driving):
        return False
    if kind != "interrupted":
        raise EngineError(f"dialog {dialog.self_id} is {kind}, not interrupted; nothing to resume")
    engine.check_drivable_target(dialog)
    for sub in working_for(engine, dialog):
        if sub.latest.run_state.kind == "interrupted" and not sub.is_driving and not sub.load_error:
            engine.request_drive(sub)
            _blocked_not_interrupted(sub)
    engine.request_drive(dialog)
    _blocked_not_interrupted(dialog)
    return True


def _blocked_not_interrupted(dialog: Dialog) -> None:
    """A resumed dialog that cannot drive yet (stopped while its subdialogs or a question were pending)
    shows what it waits for; it stayed "interrupted" until they replied, or forever if none would."""
    if not dialog.is_driving and not dialog.can_drive():
        dialog.set_run_state(dialog.idle_run_state())


def resume_all(engine: EngineServices) -> int:
    count = 0
    for root_id in engine.store.root_ids("run"):
        root = engine.load_root(root_id)
        for sub_id in engine.store.subdialog_ids("run", root_id):
            engine.try_load_sub(root, sub_id)
        for dialog in list(root.local.values()):
            if dialog.latest.run_state.kind == "interrupted" and not dialog.load_error:
                engine.request_drive(dialog)
                _blocked_not_interrupted(dialog)
                count += 1
    return count


def _settle_interrupted(engine: EngineServices, root_id: str) -> RootDialog:
    """Marking done (or archiving) is the user's word that the tree is finished: an interrupted dialog
    in it is idle (or blocked) from now on. It kept its "interrupted" badge in the Done list, and a
    revived tree offered to resume a run the user had closed."""
    root = engine.load_root(root_id)
    for sub_id in engine.store.subdialog_ids("run", root_id):
        engine.try_load_sub(root, sub_id)
    for dialog in list(root.local.values()):
        if dialog.latest.run_state.kind == "interrupted" and not dialog.load_error:
            dialog.latest.needs_drive = False
            dialog.set_run_state(dialog.idle_run_state())  # persisted, then published
    return root


async def declare_dead(engine: EngineServices, dialog: Dialog, note: str = "") -> None:
    """Subdialogs only, irreversible: its caller is unblocked with a failed response."""
    if dialog.is_root:
        raise EngineError("only subdialogs can be declared dead; stop or archive a root dialog instead")
    if dialog.is_dead:
        return
    if dialog.is_driving:
        engine.request_stop(dialog, "declared_dead")
    dialog.latest.needs_drive = False
    dialog.set_run_state(RunState(kind="dead", reason="declared_by_user", detail=note or None))
    # Dropped after the dead state is written: a crash between the two dropped acknowledged messages (and an
    # ask-back's prompt, its obligation left open) of a dialog that came back alive. Recovery drops them now.
    dialog.queue.clear()
    # Its questions can never be answered into a dead dialog: withdraw them from every list.
    for question in list(dialog.q4h):
        questions.withdraw(engine, dialog, question.id)
    # An ask-back this subdialog was waiting for will never be read: withdraw it from the asked dialog.
    for entry in [p for p in dialog.pending if p.call_type == "A"]:
        sup = engine.try_get_dialog(dialog.root_id, entry.subdialog_id)
        if sup is not None:
            sup.latest.inbound_tellask_backs = [
                i for i in sup.latest.inbound_tellask_backs if i.from_dialog_id != dialog.self_id
            ]
            sup.save_latest()
    # An ask-back made to it (by a subdialog working for it) will never be answered: its asker is told so.
    for inbound in list(dialog.latest.inbound_tellask_backs):
        await answer_tellask_back(engine, dialog, inbound, "", failure_reason=texts.declared_dead_reason(note))
    assignment = dialog.meta.assignment_from_sup
    if assignment is not None:
        await supply_response(engine, dialog, assignment, note, "failed", failure_reason=texts.declared_dead_reason(note))


async def supersede(engine: EngineServices, sub: Dialog, previous: Assignment) -> None:
    """A TYPE B session was re-assigned to another caller: the earlier caller stops waiting for it."""
    reason = "the session was re-assigned by a newer tellask; its next answer goes to the newer caller"
    await supply_response(engine, sub, previous, "", "failed", failure_reason=reason)


def move_root(engine: EngineServices, root_id: str, to_status: str) -> str:
    """Mark done (``done``), archive (``archive``) or revive (``run``) a root tree; returns the old status.
    A revived tree is read on the spot (``Engine.move_root_off_loop`` reads it in worker threads)."""
    from_status = move_root_files(engine, root_id, to_status)
    if from_status != to_status:
        if to_status == "run":
            revive(engine, engine.load_root(root_id))
        announce_move(engine, root_id, from_status, to_status)
    return from_status


def move_root_files(engine: EngineServices, root_id: str, to_status: str) -> str:
    """A root tree's directory moved to ``to_status`` (the engine forgets its copy); returns the old status.
    A revived tree must then be loaded and ``revive``d, and every move announced (``announce_move``)."""
    if to_status not in DIALOG_STATUSES:
        raise EngineError(f"unknown status {to_status!r}; expected one of {', '.join(DIALOG_STATUSES)}")
    from_status = engine.store.locate_root(root_id)
    if from_status == to_status:
        return from_status
    root = engine.roots.get(root_id)
    if root is not None:
        busy = [d.self_id for d in root.local.values() if d.is_driving]
        if busy:
            raise EngineError(f"dialog tree {root_id} is running ({', '.join(busy)}); stop it first")
    if from_status == "run" and to_status != "run":
        root = _settle_interrupted(engine, root_id)
    if root is not None:
        for dialog in root.local.values():
            questions.unindex_all(engine, dialog)
        del engine.roots[root_id]
        engine.fetched_at.pop(root_id, None)
    engine.store.move_root(root_id, from_status, to_status)
    return from_status


def revive(engine: EngineServices, revived: RootDialog) -> None:
    """A tree just moved back to ``run/``, its root loaded: every subdialog loaded (those already in
    memory are kept), its questions listed again, the drives it wanted requested."""
    for sub_id in engine.store.subdialog_ids("run", revived.root_id):
        engine.try_load_sub(revived, sub_id)
    for dialog in revived.local.values():
        questions.index_all(engine, dialog)
        if dialog.latest.needs_drive:
            engine.request_drive(dialog)


def announce_move(engine: EngineServices, root_id: str, from_status: str, to_status: str) -> None:
    engine.pubchan.publish(
        None,
        {
            "type": "dialogs_moved",
            "scope": {"kind": "root", "rootId": root_id},
            "fromStatus": from_status,
            "toStatus": to_status,
            "movedRootIds": [root_id],
        },
    )
