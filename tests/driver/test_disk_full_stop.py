"""A person's Stop and a full disk: a dialog stopped by a person stays stopped when the disk takes writes
again; the storage watcher resumes only what the disk paused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deadlines import until
from disk_full import DiskFull
from helpers import sayings
from workspace_kit import set_responses

from dominds.store.errors import WriteFailedError

SLOW = [{"message": "slow", "response": "done " * 200, "chunk_chars": 2, "delay_ms": 2}]


async def _paused(engine: Any, disk: DiskFull, *, mid_generation: bool) -> Any:
    """A root with an acknowledged message that the full disk paused: before its drive wrote anything, or
    in the middle of its generation (its drive had begun: no drive queued any more)."""
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "slow", msg_id="acked")
    if mid_generation:
        await until(lambda: root.is_driving, "driving")
    disk.armed = True
    await engine.wait_idle()
    assert root.load_error is not None, "paused by the full disk"
    return root


async def _left_stopped_once_space_returns(engine: Any, root: Any, reason: str = "user_stop") -> None:
    await until(lambda: root.load_error is None, "the watcher saw the disk take writes")
    await engine.wait_idle()
    state = root.files.read_latest().run_state
    assert (state.kind, state.reason) == ("interrupted", reason)
    assert not root.is_driving and "done" not in " ".join(sayings(root)), "not resumed"


async def _continue_answers(engine: Any, root: Any) -> None:
    assert engine.resume(root)
    await engine.wait_idle()
    assert sayings(root)[-1].startswith("done"), "Continue answers the acknowledged message"


async def test_a_dialog_stopped_while_paused_by_a_full_disk_stays_stopped_when_space_returns(make_engine, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The bug: the storage watcher resumed a paused dialog once the disk took writes, even when a person
    had stopped it meanwhile: the person's Stop was lost."""
    engine = await make_engine(SLOW)
    engine.storage_retry_interval = 0.2
    disk = DiskFull(monkeypatch)
    root = await _paused(engine, disk, mid_generation=False)
    disk.armed = False  # space returned; the watcher has not looked yet
    assert engine.stop(root), "the paused dialog's resumption is what the Stop stops"
    assert root.files.read_latest().run_state.kind == "interrupted"
    await _left_stopped_once_space_returns(engine, root)
    await _continue_answers(engine, root)


async def test_a_stop_whose_last_write_the_full_disk_refused_stays_stopped_when_space_returns(make_engine, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The bug: a drive stopped by a person ends by writing ``interrupted{user_stop}``; when the full disk
    refused that write the dialog paused, and the watcher, once writes succeeded, replaced the person's
    reason with ``storage_error`` and drove the dialog again."""
    engine = await make_engine(SLOW)
    engine.storage_retry_interval = 0.05
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "slow", msg_id="acked")
    await until(lambda: root.is_driving, "driving")
    disk = DiskFull(monkeypatch)
    assert engine.stop(root)
    disk.armed = True  # the stopped drive's last writes are refused
    await engine.wait_idle()
    assert root.load_error is not None, "paused by the full disk"
    disk.armed = False
    await _left_stopped_once_space_returns(engine, root)
    await _continue_answers(engine, root)


async def test_a_dialog_the_full_disk_paused_mid_generation_can_be_stopped(make_engine, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The bug: a dialog paused in the middle of a generation has no drive queued (its drive had begun), so
    Stop found nothing to stop and answered that nothing was stopped; the watcher then resumed it."""
    engine = await make_engine(SLOW)
    engine.storage_retry_interval = 0.2
    disk = DiskFull(monkeypatch)
    root = await _paused(engine, disk, mid_generation=True)
    with pytest.raises(WriteFailedError):
        engine.stop(root)  # the Stop's own write is refused while the disk is full: answered with the error
    assert root.latest.run_state.kind != "interrupted", "and it has no effect"
    disk.armed = False
    assert engine.stop(root), "the paused dialog's resumption is what the Stop stops"
    state = root.files.read_latest().run_state
    assert (state.kind, state.reason) == ("interrupted", "user_stop"), "persisted before it was answered"
    await _left_stopped_once_space_returns(engine, root)
    await _continue_answers(engine, root)


async def test_an_emergency_stop_stops_dialogs_the_full_disk_paused(make_engine, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The bug (a sibling of the Stop's): the emergency stop counted only dialogs driving or queued for a
    drive, so a paused one was resumed by the watcher once the disk took writes."""
    engine = await make_engine(SLOW)
    engine.storage_retry_interval = 0.2
    disk = DiskFull(monkeypatch)
    root = await _paused(engine, disk, mid_generation=True)
    disk.armed = False
    assert engine.emergency_stop() == 1
    await _left_stopped_once_space_returns(engine, root, "emergency_stop")


async def test_a_stop_of_a_paused_dialog_holds_across_a_restart(make_engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The bug: a Stop made while the dialog was paused, then the daemon stopped before its watcher looked:
    recovery found the generation open and resumed the dialog as ``server_restart``. It now closes the cut
    generation and leaves the dialog stopped; Continue answers the message."""
    engine = await make_engine(SLOW)
    engine.storage_retry_interval = 60.0  # the watcher does not look before the restart
    disk = DiskFull(monkeypatch)
    root = await _paused(engine, disk, mid_generation=True)
    disk.armed = False
    assert engine.stop(root)
    await engine.close()
    engine2 = await make_engine([], root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    state = restored.latest.run_state
    assert (state.kind, state.reason) == ("interrupted", "user_stop")
    assert not restored.latest.generating and "done" not in " ".join(sayings(restored))
    set_responses(engine2.rtws, SLOW)
    await _continue_answers(engine2, restored)
