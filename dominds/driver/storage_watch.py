"""A dialog whose disk refused a write pauses, and resumes by itself once the disk takes writes again.

The failed drive leaves the dialog paused (``load_error`` set: it is shown with the reason and refuses new
messages, which could not be stored anyway). A watcher probes the dialog's directory every few seconds
with an allocation of real new blocks (``store/space.py``: the dialog's own state write is no proof, it
rewrites blocks it already has and succeeds on a full disk); when the probe succeeds, the cut generation is
closed exactly as crash recovery would close it, and the dialog is resumed. A write that still fails
after the probe (the space went again) is one more round: the watcher lives until the dialog resumes or
the engine closes, whatever a round raises. Nothing acknowledged was lost: it was on disk before it was
acknowledged. After a restart, recovery resumes a dialog left ``interrupted{storage_error}``; a tree
whose recovery the still-full disk refused is recovered again, from its files, once a probe succeeds.
"""

from __future__ import annotations

import asyncio
import logging

from dominds.dialog.model import Dialog
from dominds.driver import questions
from dominds.driver.services import EngineServices
from dominds.store.errors import StoreError
from dominds.store.records import RunState
from dominds.store.space import probe_free_space

log = logging.getLogger("dominds.storage")

STORAGE_ERROR = "storage_error"
"""Reason of ``interrupted`` for a dialog paused by a refused write (resumed by the watcher or recovery)."""


async def resume_when_writable(engine: EngineServices, dialog: Dialog, problem: str) -> None:
    while not engine.closed:
        await asyncio.sleep(engine.storage_retry_interval)
        if dialog.is_driving:
            continue
        try:
            if _try_resume(engine, dialog, problem):
                return
        except StoreError:
            continue  # still full (or full again): try again later
        except Exception:  # never die silently: a dead watcher left the dialog paused for good
            log.exception("dialog %s: resuming after a storage failure failed; retrying", dialog.self_id)


def _try_resume(engine: EngineServices, dialog: Dialog, problem: str) -> bool:
    from dominds.driver import run_control
    from dominds.driver.recovery import close_interrupted_generation
    from dominds.driver.recovery_calls import stop_reason_to_keep

    probe_free_space(dialog.files.dir)
    # A Stop the full disk kept the drive's end from recording, or one made while the dialog was paused, is
    # kept as recovery keeps it; before, the watcher turned it into ``storage_error`` and drove the dialog.
    stopped_by = stop_reason_to_keep(dialog.latest.run_state)
    close_interrupted_generation(dialog)
    if stopped_by is None and dialog.latest.run_state.kind == "interrupted":
        dialog.set_run_state(RunState(kind="interrupted", reason=STORAGE_ERROR, detail=problem), save=False)
    dialog.save_latest()
    paused_with, dialog.load_error = dialog.load_error, None
    try:
        questions.save_unsaved(engine, dialog)
        _finish_cut_dispatches(engine, dialog)
        if stopped_by is not None:
            dialog.stop_reason = None
            run_control.stop_under(engine, dialog, stopped_by)  # what the drive's end did not get to
        elif dialog.can_drive():
            engine.request_drive(dialog)  # persists needsDrive: may be refused too
    except BaseException:
        dialog.load_error = paused_with  # still paused: the next round tries again
        raise
    if stopped_by is not None:
        log.warning("dialog %s: the disk takes writes again; left stopped (%s)", dialog.self_id, stopped_by)
    else:
        log.warning("dialog %s: the disk takes writes again; resuming", dialog.self_id)
    return True


def _finish_cut_dispatches(engine: EngineServices, dialog: Dialog) -> None:
    """Dispatches the refused write cut after their commit point (the pending entry): the subdialog not
    created, the registry key not added. Finished as recovery finishes them after a crash; before, the caller
    resumed blocked on a subdialog that did not exist, until the next restart."""
    from dominds.driver.recovery_calls import complete_dispatches

    root = dialog.root
    registry_before = dict(root.type_b)
    complete_dispatches(engine, root, dialog)
    if root.type_b != registry_before:
        root.save_registry()


async def recover_when_writable(engine: EngineServices, root_id: str, problem: str) -> None:
    """A tree whose recovery at the daemon's start the disk refused (still full): recovered again, from its
    files, once a probe allocates real blocks in it; the watcher lives until then or the engine closes.
    Before, the tree stayed marked broken and stuck (a session shown proceeding, its caller blocked) until
    the next restart."""
    from dominds.driver.recovery import recover_root

    while not engine.closed:
        await asyncio.sleep(engine.storage_retry_interval)
        try:
            probe_free_space(engine.store.root_dir("run", root_id))
            recover_root(engine, root_id)
        except StoreError:
            continue  # still full (or full again): try again later
        except Exception:  # never die silently: a dead watcher left the tree stuck for good
            log.exception("tree %s: recovering after a storage failure failed; retrying", root_id)
            continue
        log.warning("tree %s: the disk takes writes again; recovered (it had failed with: %s)", root_id, problem)
        return
