"""Disk full: the write failure is reported, nothing acknowledged is lost, and the daemon lives on."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from helpers import records, sayings
from workspace_kit import set_responses

from dominds.store import atomic
from dominds.store.course_records import HumanTextRecord
from dominds.store.errors import WriteFailedError


class DiskFull:
    """Make every write of the process fail with ENOSPC while armed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        real_write = os.write

        def write(fd: int, data: bytes) -> int:  # type: ignore[override]
            if self.armed:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        monkeypatch.setattr(atomic.os, "write", write)


async def test_refused_message_is_not_acknowledged_and_the_daemon_lives_on(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Bug: a message refused by a full disk stayed in the in-memory queue and was sent later anyway."""
    engine = await make_engine([{"message": "one", "response": "1"}, {"message": "two", "response": "2"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "one", msg_id="m1")
    await engine.wait_idle()
    disk = DiskFull(monkeypatch)
    disk.armed = True
    with pytest.raises(WriteFailedError) as err:
        engine.submit_user_message(root, "two", msg_id="m2")
    assert "no space left on device" in str(err.value) and "latest.yaml" in str(err.value)
    disk.armed = False
    latest = root.files.read_latest()
    assert latest is not None and latest.queued_prompts == [], "the old latest.yaml is intact"
    assert root.latest.queued_prompts == [], "the refused message is not queued in memory either"
    engine.submit_user_message(root, "two", msg_id="m2")
    await engine.wait_idle()
    assert [r.msg_id for r in records(root) if isinstance(r, HumanTextRecord)] == ["m1", "m2"]
    assert sayings(root) == ["1", "2"]


async def test_failure_mid_drive_stops_that_dialog_with_the_reason(make_engine, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"message": "slow", "response": "x" * 400, "chunk_chars": 4, "delay_ms": 2}, {"message": "hi", "response": "hello"}])
    errors: list[str] = []
    engine.pubchan.subscribe(lambda e: errors.append(e["error"]) if e["type"] == "stream_error_evt" else None, wants_all=True)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    other = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "slow", msg_id="acked")
    disk = DiskFull(monkeypatch)
    disk.armed = True  # the generation's first write fails
    await engine.wait_idle()
    disk.armed = False
    assert any("storage failure" in e and "no space left" in e for e in errors)
    engine.submit_user_message(other, "hi")
    await engine.wait_idle()
    assert sayings(other) == ["hello"], "other dialogs keep running"
    await engine.close()
    # After a restart (space freed) the acknowledged message is still there and gets its answer.
    set_responses(engine.rtws, [{"message": "slow", "response": "done"}])
    engine2 = await make_engine([], root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert [r.msg_id for r in records(restored) if isinstance(r, HumanTextRecord)] == ["acked"]
    assert sayings(restored) == ["done"]
