"""A dialog whose disk refused a write pauses, and resumes by itself once the disk takes writes again.

The failed drive leaves the dialog paused (``load_error`` set: it is shown with the reason and refuses new
messages, which could not be stored anyway). A watcher retries the dialog's own state write every few
seconds; when it succeeds, the cut generation is closed exactly as crash recovery would close it, and
the dialog is resumed. Nothing acknowledged was lost: it was on disk before it was acknowledged.
"""

from __future__ import annotations

import asyncio
import logging

from dominds.dialog.model import Dialog
from dominds.driver.services import EngineServices
from dominds.store.errors import StoreError
from dominds.store.records import RunState

log = logging.getLogger("dominds.storage")


async def resume_when_writable(engine: EngineServices, dialog: Dialog, problem: str) -> None:
    from dominds.driver.recovery import close_interrupted_generation

    while not engine.closed:
        await asyncio.sleep(engine.storage_retry_interval)
        if dialog.is_driving:
            continue
        try:
            close_interrupted_generation(dialog)
            if dialog.latest.run_state.kind == "interrupted":
                dialog.set_run_state(RunState(kind="interrupted", reason="storage_error", detail=problem), save=False)
            dialog.save_latest()
        except StoreError:
            continue  # still full: try again later
        log.warning("dialog %s: the disk takes writes again; resuming", dialog.self_id)
        dialog.load_error = None
        if dialog.can_drive():
            engine.request_drive(dialog)
        return
