"""The one scheduler that owns all driving, and the cache of recent transcripts.

A dialog is driven when its persisted ``needsDrive`` is set and it can drive; one drive per dialog at a
time (its FIFO mutex), at most ``EngineServices.max_concurrent_drives`` at once. A drive that hits a storage
error pauses its dialog until the disk takes writes again; any other failure interrupts it without a
retry (the same input would fail the same way, in a hot loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

from dominds.background import BackgroundTasks, contain
from dominds.dialog.model import Dialog
from dominds.driver.drive import drive_dialog
from dominds.driver.drive_scope import DriveScopes
from dominds.driver.services import EngineServices
from dominds.driver.storage_watch import resume_when_writable
from dominds.store.errors import StoreError, storage_pause
from dominds.store.records import RunState

log = logging.getLogger("dominds.engine")


class Scheduler:
    def __init__(self, engine: EngineServices) -> None:
        self.engine = engine
        self.wanted: set[tuple[str, str]] = set()
        self.wake = asyncio.Event()
        self.idle = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.drives: set[asyncio.Task[None]] = set()
        self.scopes = DriveScopes()
        """The cancel scope of each drive in flight (driver/drive_scope.py): Stop and shutdown cancel them."""
        self.background = BackgroundTasks("scheduler")
        """Storage watchers (storage_watch.py): cancelled and awaited by ``stop``."""
        self.transcripts: OrderedDict[str, Dialog] = OrderedDict()
        self.transcript_sizes: dict[str, int] = {}

    def start(self) -> None:
        self.task = asyncio.create_task(self._schedule_forever(), name="dominds-scheduler")
        self.wake.set()

    async def stop(self, timeout: float) -> None:
        """Shutdown: start no drive, cancel every drive's scope and wait until each has written its final
        records (generation and tool calls closed as interrupted, run state ``interrupted``). A drive still
        running after ``timeout`` (a tool that ignores cancellation) is cancelled outright and awaited."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.wanted.clear()
        self.scopes.cancel_all("server_shutdown")
        for dialog in [d for root in self.engine.roots.values() for d in root.local.values()]:
            if dialog.is_driving:
                dialog.stop_reason = dialog.stop_reason or "server_shutdown"
        if self.drives:
            _, late = await asyncio.wait(self.drives, timeout=timeout)
            for task in late:
                log.error("drive %s did not end within %gs of its cancellation; cancelling it outright", task.get_name(), timeout)
                task.cancel()
            if late:
                await asyncio.wait(late)
        await self.background.aclose()

    def forget(self, self_id: str) -> None:
        """A dialog was unloaded: drop its cached transcript."""
        self.transcripts.pop(self_id, None)
        self.transcript_sizes.pop(self_id, None)

    def want(self, dialog: Dialog) -> None:
        self.wanted.add((dialog.root_id, dialog.self_id))
        self.idle.clear()
        self.wake.set()

    async def _schedule_forever(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            try:
                self._start_wanted()  # a function of its own: no dialog stays referenced while this waits
            except Exception:  # a bug here must not end all driving silently: logged, the next wake retries
                log.exception("the scheduler failed to start drives")

    def _start_wanted(self) -> None:
        engine = self.engine
        for root_id, self_id in sorted(self.wanted):
            dialog = engine.try_get_dialog(root_id, self_id)
            if dialog is None or not dialog.latest.needs_drive or dialog.root.status != "run":
                self.wanted.discard((root_id, self_id))
                continue
            if dialog.is_driving or not dialog.can_drive():
                continue
            if len(self.drives) >= engine.max_concurrent_drives:
                break  # the rest wait for a slot; a finishing drive wakes the scheduler
            self.wanted.discard((root_id, self_id))
            # ``stop`` waits for drives with ``asyncio.wait``, which reads no result: a drive that fails
            # past its own handlers is logged when it ends
            task = contain("scheduler", asyncio.create_task(self._drive(dialog), name=f"drive-{self_id}"))
            dialog.drive_task = task
            self.drives.add(task)
        if not self.drives and not self._drivable_wanted():
            self.idle.set()

    def _drivable_wanted(self) -> bool:
        for root_id, self_id in self.wanted:
            dialog = self.engine.try_get_dialog(root_id, self_id)
            if dialog is not None and dialog.can_drive() and dialog.latest.needs_drive:
                return True
        return False

    async def _drive(self, dialog: Dialog) -> None:
        engine = self.engine
        try:
            # the scope opens before the mutex is taken: a Stop while the drive waits for it counts
            with self.scopes.open(dialog.self_id) as scope:
                async with dialog.drive_mutex:
                    _mark_registry_locked(dialog, True)
                    try:
                        await drive_dialog(engine, dialog, scope)
                    finally:
                        _mark_registry_locked(dialog, False)
        except StoreError as exc:  # the disk refused: the dialog pauses with the reason, nothing else is lost
            log.error("dialog %s paused: %s", dialog.self_id, exc)
            dialog.load_error = storage_pause(exc)
            self.background.spawn(resume_when_writable(engine, dialog, str(exc)), name=f"storage-{dialog.self_id}")
            engine.pubchan.publish(
                dialog.key,
                {
                    "type": "stream_error_evt",
                    "course": dialog.latest.current_course,
                    "genseq": dialog.genseq or None,
                    "error": f"storage failure: {exc}",
                },
            )
        except Exception as exc:  # a bug in one drive must not stop the daemon
            log.exception("drive of %s failed", dialog.self_id)
            # No automatic retry: the same input would fail the same way, in a hot loop. A person resumes it.
            dialog.latest.needs_drive = False
            with contextlib.suppress(Exception):
                dialog.set_run_state(RunState(kind="interrupted", reason="system_stop", detail=f"internal error: {exc}"))
                dialog.save_latest()
        finally:
            self.drives.discard(asyncio.current_task())  # type: ignore[arg-type,unused-ignore]
            self._remember_transcript(dialog)
            if dialog.latest.needs_drive:
                self.want(dialog)
            self.wake.set()

    def _remember_transcript(self, dialog: Dialog) -> None:
        """Keep recent transcripts in memory, bounded by count and by text size (the files are the truth)."""
        engine = self.engine
        self.transcripts[dialog.self_id] = dialog
        self.transcripts.move_to_end(dialog.self_id)
        self.transcript_sizes[dialog.self_id] = dialog.transcript_chars()
        while len(self.transcripts) > 1 and (
            len(self.transcripts) > engine.transcript_cache_size
            or sum(self.transcript_sizes.values()) > engine.transcript_cache_chars
        ):
            oldest_id, oldest = self.transcripts.popitem(last=False)
            self.transcript_sizes.pop(oldest_id, None)
            oldest.release_transcript()
        if self.transcript_sizes.get(dialog.self_id, 0) > engine.transcript_cache_chars:
            self.transcripts.pop(dialog.self_id, None)  # alone too big to keep: read again when needed
            self.transcript_sizes.pop(dialog.self_id, None)
            dialog.release_transcript(drive_over=True)

    async def wait_idle(self, timeout: float) -> None:
        async def _settled() -> None:
            while True:
                self.wake.set()
                await self.idle.wait()
                await asyncio.sleep(0)
                if self.idle.is_set() and not self.drives:
                    return

        await asyncio.wait_for(_settled(), timeout)


def _mark_registry_locked(dialog: Dialog, locked: bool) -> None:
    """Seed: a registered (TYPE B) subdialog's registry entry says ``locked: true`` while it is driven."""
    session = dialog.meta.tellask_session
    if dialog.is_root or not session:
        return
    key = f"{dialog.agent_id}!{session}"
    entry = dialog.root.type_b.get(key)
    if entry is None or entry.subdialog_id != dialog.self_id or entry.locked == locked:
        return
    dialog.root.type_b[key] = entry.model_copy(update={"locked": locked})
    dialog.root.save_registry()
