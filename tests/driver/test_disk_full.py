"""Disk full: the write failure is reported, nothing acknowledged is lost, and the daemon lives on."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pytest
from deadlines import until
from disk_full import DiskFull
from helpers import records, sayings
from tmpfs import Filler, tmpfs
from workspace_kit import set_responses

from dominds.driver import storage_watch
from dominds.store import atomic, space
from dominds.store.course_records import HumanTextRecord, TeammateResponseRecord
from dominds.store.errors import WriteFailedError


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
    assert latest is not None and root.files.read_queue() == [], "nothing is queued on disk"
    assert not root.queue, "the refused message is not queued in memory either"
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


async def test_a_half_written_line_is_cut_back_before_the_next_append(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Bug: a full disk left half a course line; later appends in the same run (the generation's cleanup, an
    arriving answer) went after it, so a bad line sat mid-file and the dialog refused messages after restart."""
    engine = await make_engine([{"message": "one", "response": "1"}, {"message": "two", "response": "2"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "one", msg_id="m1")
    await engine.wait_idle()
    real_write = os.write
    course = root.files.course(1)
    fail_once = {"armed": True}

    def half_then_full(fd: int, data: bytes) -> int:  # type: ignore[override]
        if fail_once["armed"] and os.fstat(fd).st_ino == os.stat(course).st_ino:
            fail_once["armed"] = False
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(atomic.os, "write", half_then_full)
    size_before = course.stat().st_size
    with pytest.raises(WriteFailedError):
        root.files.append(1, records(root)[-1])
    assert course.stat().st_size == size_before, "the torn half line was cut away"
    engine.submit_user_message(root, "two", msg_id="m2")
    await engine.wait_idle()
    assert [r.msg_id for r in root.files.read_course(1) if isinstance(r, HumanTextRecord)] == ["m1", "m2"]


async def test_a_dialog_paused_by_a_full_disk_resumes_when_space_returns(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A refused write pauses the dialog (shown with the reason); once writes succeed again it resumes by
    itself, without a daemon restart, and answers the acknowledged message."""
    engine = await make_engine([{"message": "slow", "response": "done", "chunk_chars": 2, "delay_ms": 2}])
    engine.storage_retry_interval = 0.05
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "slow", msg_id="acked")
    disk = DiskFull(monkeypatch)
    disk.armed = True
    await engine.wait_idle()
    assert root.load_error is not None and "no space left" in root.load_error
    # two probes of the watcher refused: it tried, twice, while the disk was full (was a fixed 0.2-s sleep,
    # which passed without any probe on a slow machine)
    probes = disk.probes_refused
    for _ in range(3000):
        if disk.probes_refused >= probes + 2:
            break
        await asyncio.sleep(0.01)
    assert disk.probes_refused >= probes + 2, "the watcher probes again while the disk is full"
    assert root.load_error is not None, "still paused while the disk is full"
    disk.armed = False
    await until(lambda: not root.load_error and sayings(root) == ["done"], "resumed and answered")
    await engine.wait_idle()
    assert root.load_error is None and sayings(root) == ["done"]
    assert [r.msg_id for r in records(root) if isinstance(r, HumanTextRecord)] == ["acked"]
    assert root.latest.run_state.kind == "idle"


SESSION_ON_A_FULL_DISK = [
    {"agent": "lead", "message": "go", "response": "!?@coder !tellaskSession job build it\n"},
    # Long enough that its record needs new pages of the tmpfs: the write the full disk refuses.
    {"agent": "coder", "contains": "build it", "response": "built " + "x" * 20000, "chunk_chars": 4000, "delay_ms": 5},
    {"agent": "lead", "contains": "built", "response": "Done."},
]


class WatchRounds:
    """The watcher's probes, counted: five refused ones, and the first that passed."""

    def __init__(self) -> None:
        self.refused = 0
        self.five_refused = asyncio.Event()
        self.passed = asyncio.Event()


async def _coder_paused_on_a_full_tmpfs(make_engine, ws: Path, rounds: WatchRounds, monkeypatch) -> tuple[Any, Any, Filler]:  # type: ignore[no-untyped-def]
    """The lead tellasks a coder session; the disk fills (really: a tmpfs at 0 bytes free) while it streams."""
    real_probe = storage_watch.probe_free_space

    def counted_probe(directory: Path, size: int = space.PROBE_BYTES) -> None:
        try:
            real_probe(directory, size)
        except WriteFailedError:
            rounds.refused += 1
            if rounds.refused >= 5:
                rounds.five_refused.set()
            raise
        rounds.passed.set()

    monkeypatch.setattr(storage_watch, "probe_free_space", counted_probe)
    engine = await make_engine(SESSION_ON_A_FULL_DISK, root=ws)
    engine.storage_retry_interval = 0.02
    filler = Filler(ws.parent)

    filled: list[bool] = []

    def fill_when_the_coder_speaks(event: dict[str, Any]) -> None:
        if event["type"] == "saying_start_evt" and event["dialog"]["selfId"] != event["dialog"]["rootId"]:
            if not filled:
                filled.append(True)
                filler.fill()

    engine.pubchan.subscribe(fill_when_the_coder_speaks, wants_all=True)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go", msg_id="m1")
    await engine.wait_idle()
    coder = next(d for d in root.local.values() if not d.is_root)
    assert coder.load_error is not None and "no space left" in coder.load_error, coder.load_error
    return engine, root, filler


@pytest.mark.slow
async def test_a_session_paused_on_a_really_full_disk_waits_for_space_and_then_resumes(make_engine, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (issue 34): the watcher probed with the dialog's own state write, which goes over its spare's blocks
    and succeeds on a disk with 0 bytes free; the next write failed, the watcher task died ("Task exception
    was never retrieved") and nothing retried, so the TYPE B session stayed paused and its caller blocked."""
    unhandled: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: unhandled.append(context))
    rounds = WatchRounds()
    with tmpfs(tmp_path / "mnt") as mnt:
        engine, root, filler = await _coder_paused_on_a_full_tmpfs(make_engine, mnt / "ws", rounds, monkeypatch)
        coder = next(d for d in root.local.values() if not d.is_root)
        await rounds.five_refused.wait()  # the watcher keeps probing while the disk stays full
        assert not rounds.passed.is_set() and coder.load_error is not None, "the probe is not fooled by the spare"
        assert not unhandled, unhandled
        filler.free()
        await rounds.passed.wait()
        await engine.wait_idle()
        assert coder.load_error is None and root.latest.run_state.kind == "idle"
        assert sayings(root)[-1] == "Done." and sayings(coder)[-1].startswith("built ") and not unhandled
        await engine.close()


@pytest.mark.slow
async def test_a_session_left_paused_by_a_full_disk_is_resumed_by_recovery_once_space_returns(make_engine, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (issue 34): recovery did not resume ``interrupted{storage_error}``, so a session the daemon left
    paused on a full disk (its watcher had saved that state) stayed so after a restart, its caller blocked."""
    with tmpfs(tmp_path / "mnt") as mnt:
        engine, root, filler = await _coder_paused_on_a_full_tmpfs(make_engine, mnt / "ws", WatchRounds(), monkeypatch)
        coder = next(d for d in root.local.values() if not d.is_root)
        # The daemon dies right after the watcher saved the state, before the drive it requests.
        died = asyncio.Event()
        monkeypatch.setattr(engine, "request_drive", lambda dialog: died.set())
        filler.free()
        await died.wait()
        await engine.close()
        latest = coder.files.read_latest()
        assert latest is not None and (latest.run_state.kind, latest.run_state.reason) == ("interrupted", "storage_error")
        engine2 = await make_engine([], root=mnt / "ws")
        await engine2.wait_idle()
        restored = engine2.get_dialog(root.root_id)
        assert sayings(restored)[-1] == "Done."
        assert all(d.latest.run_state.kind == "idle" for d in restored.local.values())
        await engine2.close()


async def _session_call_on_a_full_disk(make_engine, monkeypatch, refused: bytes):  # type: ignore[no-untyped-def]
    """The lead's call to a coder session, sent while the disk refuses every write holding ``refused``."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@coder !tellaskSession job build it\n"},
            {"agent": "coder", "contains": "build it", "response": "Built."},
            {"agent": "lead", "contains": "Built.", "response": "Done."},
        ]
    )
    engine.storage_retry_interval = 0.05
    disk = DiskFull(monkeypatch)
    disk.refuses = lambda data: refused in data
    disk.armed = True
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go", msg_id="m1")
    return engine, disk, root


async def test_an_answer_the_full_disk_keeps_out_of_the_callers_course_is_delivered_once_space_returns(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 34's siblings ("every writer a watcher retries"): the write a subdialog's drive makes into *another*
    dialog, its answer into the caller's course, refused by a full disk. The caller must not stay blocked: the
    subdialog is paused with the reason and, once writes succeed, the answer is delivered exactly once."""
    engine, disk, root = await _session_call_on_a_full_disk(make_engine, monkeypatch, b"teammate_response_record")
    await engine.wait_idle()
    coder = next(d for d in root.local.values() if not d.is_root)
    assert coder.load_error is not None and "no space left" in coder.load_error and "course-001.jsonl" in coder.load_error
    assert root.latest.run_state.kind == "blocked" and len(root.pending) == 1, "the answer did not reach the caller"
    probes = disk.probes_refused
    for _ in range(3000):  # the watcher keeps probing while the disk is full
        if disk.probes_refused >= probes + 2:
            break
        await asyncio.sleep(0.01)
    assert disk.probes_refused >= probes + 2 and coder.load_error is not None
    disk.armed = False
    for _ in range(3000):
        if not coder.load_error and sayings(root)[-1:] == ["Done."]:
            break
        await asyncio.sleep(0.01)
    await engine.wait_idle()
    assert coder.load_error is None and sayings(root)[-1] == "Done." and not root.pending
    answers = [r for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert [a.response for a in answers] == ["Built."], "delivered exactly once"
    assert root.latest.run_state.kind == "idle" and coder.latest.run_state.kind == "idle"


async def test_a_daemon_started_on_a_still_full_disk_recovers_the_tree_once_space_returns(make_engine, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (found verifying issue 34, item 2): a daemon started while the disk was still full failed the
    recovery of a tree ("recovery of … failed: cannot write …: no space left on device"), left it marked
    broken with its session shown as proceeding, and nothing tried again: once space returned, the caller
    and its session stayed stuck until the next restart. Recovery's writes are retried like a drive's."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@coder !tellaskSession job build it\n"},
            {"agent": "coder", "contains": "build it", "response": "Built " + "x" * 200, "chunk_chars": 10, "delay_ms": 5},
            {"agent": "lead", "contains": "Built", "response": "Done."},
        ]
    )
    disk = DiskFull(monkeypatch)

    def fill_when_the_coder_speaks(event: dict[str, Any]) -> None:
        if event["type"] == "saying_start_evt" and event["dialog"]["selfId"] != event["dialog"]["rootId"]:
            disk.armed = True

    engine.pubchan.subscribe(fill_when_the_coder_speaks, wants_all=True)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go", msg_id="m1")
    await engine.wait_idle()
    assert any(d.load_error and "no space left" in d.load_error for d in root.local.values())
    await engine.close()

    restarted = await make_engine([], root=tmp_path / "ws")  # the disk is still full
    restarted.storage_retry_interval = 0.05
    probes = disk.probes_refused
    for _ in range(3000):  # the tree's recovery waits for space, probing
        if disk.probes_refused >= probes + 2:
            break
        await asyncio.sleep(0.01)
    assert disk.probes_refused >= probes + 2, "recovery waits for the disk, probing"
    disk.armed = False
    tree = restarted.get_dialog(root.root_id)
    for _ in range(3000):
        tree = restarted.get_dialog(root.root_id)
        if sayings(tree)[-1:] == ["Done."]:
            break
        await asyncio.sleep(0.01)
    await restarted.wait_idle()
    tree = restarted.get_dialog(root.root_id)
    assert sayings(tree)[-1] == "Done."
    assert all(d.latest.run_state.kind == "idle" and not d.load_error for d in tree.local.values())
    coder = next(d for d in tree.local.values() if not d.is_root)
    assert sayings(coder)[-1].startswith("Built "), "the session finished its answer"


async def test_a_session_the_full_disk_kept_from_being_created_is_created_once_space_returns(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Bug (found verifying issue 34, item 2: "TYPE B subdialogs created during the full disk"): the disk refused
    the new session's files after the caller's pending entry (the dispatch's commit point) was written. The
    watcher resumed the caller once space returned, but nothing created the session: the caller waited, blocked
    on a subdialog that did not exist, until the next restart's recovery. The watcher now finishes such a
    dispatch as recovery does."""
    engine, disk, root = await _session_call_on_a_full_disk(make_engine, monkeypatch, b"assignmentFromSup")  # the new session's dialog.yaml
    await engine.wait_idle()
    assert root.load_error is not None and "no space left" in root.load_error
    assert len(root.pending) == 1 and engine.store.subdialog_ids("run", root.root_id) == []
    probes = disk.probes_refused
    for _ in range(3000):
        if disk.probes_refused >= probes + 2:
            break
        await asyncio.sleep(0.01)
    disk.armed = False
    for _ in range(3000):
        if sayings(root)[-1:] == ["Done."]:
            break
        await asyncio.sleep(0.01)
    await engine.wait_idle()
    assert sayings(root)[-1] == "Done." and not root.pending and root.load_error is None
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    assert root.root.type_b["coder!job"].subdialog_id == sub_id
    answers = [r for r in records(root) if isinstance(r, TeammateResponseRecord)]
    assert [(a.callee_dialog_id, a.response) for a in answers] == [(sub_id, "Built.")]
    assert all(d.latest.run_state.kind == "idle" for d in root.local.values())


async def test_a_question_the_full_disk_kept_from_being_saved_is_asked_once_space_returns(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Bug (found verifying issue 34, item 2: every writer a watcher retries): a subdialog's question to the
    human whose `q4h.yaml` the full disk refused stayed in memory only, never indexed: once space returned the
    subdialog resumed blocked on it, `/api/q4h` listed nothing and answering it was refused ("not pending"), so
    the subdialog and its caller waited forever. The watcher now saves, indexes and announces it."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@coder build it\n"},
            {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
            {"agent": "coder", "contains": "postgres", "response": "Built on postgres."},
            {"agent": "lead", "contains": "Built on postgres.", "response": "Done."},
        ]
    )
    engine.storage_retry_interval = 0.05
    asked: list[dict[str, Any]] = []
    engine.pubchan.subscribe(lambda e: asked.append(e) if e["type"] == "new_q4h_asked" else None, wants_all=True)
    disk = DiskFull(monkeypatch)
    disk.refuses = lambda data: b"Which database?" in data and b"questions" in data  # the subdialog's q4h.yaml
    disk.armed = True
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go", msg_id="m1")
    await engine.wait_idle()
    coder = next(d for d in root.local.values() if not d.is_root)
    assert coder.load_error is not None and "no space left" in coder.load_error
    assert engine.q4h_state() == [] and not asked
    disk.armed = False
    # The announcement is delivered once its write is durable (after the group commit), so it is what the
    # test waits for: waiting for the question to be listed and then counting the announcements failed
    # whenever the listing came first.
    for _ in range(3000):
        if asked:
            break
        await asyncio.sleep(0.01)
    [question] = engine.q4h_state()
    assert question["tellaskHead"].startswith("@human")
    engine.answer_question(question["id"], "postgres")
    await engine.wait_idle()
    assert len(asked) == 1, "shown once, when it was saved"
    assert sayings(root)[-1] == "Done." and sayings(coder)[-1] == "Built on postgres."
    assert all(d.latest.run_state.kind == "idle" and not d.q4h for d in root.local.values())
