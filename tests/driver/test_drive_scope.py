"""A drive is one cancel scope (issue 30): Stop and shutdown cancel everything the drive runs.

Before: Stop cancelled only the LLM stream, so a Stop during ``shell_cmd sleep 12`` ended the drive after
the tool had finished; ``Engine.close()`` released the workspace lock while drives still ran, and a drive
cancelled then wrote ``gen_finish_record status: ok`` with no tool result; ``asyncio.gather`` left sibling
tool calls and dispatches running (and writing) after one of them failed.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import filelock
from deadlines import until
from helpers import records
from workspace_kit import write_workspace

from dominds.dialog.model import Dialog
from dominds.driver.engine import Engine
from dominds.store.course_records import (
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    RunMarkerRecord,
    SubdialogCreatedRecord,
)
from tests.processes import running

SLEEPER = "sleep 30 & echo $! > {pidfile}; wait"
"""A shell command whose real work is a child process (its pid in ``pidfile``): killing bash alone would
leave it running."""


def _shell_workspace(tmp_path: Path, responses: list[dict[str, Any]]) -> Engine:
    rtws = write_workspace(tmp_path / "ws", responses)
    team = rtws.team_yaml.read_text()
    team = team.replace("gofor: [plans and delegates]}", "gofor: [plans and delegates], toolsets: [os]}")
    team = team.replace("gofor: [writes code]}", "gofor: [writes code], toolsets: [os]}")
    rtws.team_yaml.write_text(team + "shell_specialists: [lead, coder]\n")
    return Engine(rtws)


def _shell_call(message: str, command: str, agent: str = "lead") -> dict[str, Any]:
    return {"agent": agent, "message": message, "stream": [{"func_call": {"name": "shell_cmd", "arguments": {"command": command}}}]}



async def drive_ends(dialog: Dialog, timeout: float) -> bool:
    """Whether the dialog's drive ended within ``timeout`` (far less than its tool would take)."""
    task = dialog.drive_task
    if task is None or task.done():
        return True
    done, _ = await asyncio.wait({task}, timeout=timeout)
    return task in done


def course(dialog: Dialog) -> list[Any]:
    return [r for n in dialog.files.course_numbers() for r in dialog.files.read_course(n)]


def assert_closed(dialog: Dialog) -> None:
    """Every generation and every tool call of the dialog is closed in its course; a stopped one is
    interrupted, never ok."""
    recs = course(dialog)
    starts = [r.genseq for r in recs if isinstance(r, GenStartRecord)]
    finishes = {r.genseq: r for r in recs if isinstance(r, GenFinishRecord)}
    assert sorted(starts) == sorted(finishes), f"{dialog.self_id}: generations not closed"
    calls = {r.id for r in recs if isinstance(r, FuncCallRecord)}
    results = {r.id: r for r in recs if isinstance(r, FuncResultRecord)}
    assert calls == set(results), f"{dialog.self_id}: tool calls without a result: {calls - set(results)}"
    for result in results.values():
        if result.interrupted:
            assert finishes[result.genseq].status == "interrupted", "a generation with an interrupted tool call was ok"


async def test_stop_kills_a_running_shell_cmd_within_a_second_and_resume_works(tmp_path: Path) -> None:
    pidfile = tmp_path / "sleep.pid"
    engine = _shell_workspace(
        tmp_path,
        [
            _shell_call("run it", SLEEPER.format(pidfile=pidfile)),
            {"agent": "lead", "role": "tool", "contains": "INTERRUPTED (user_stop)", "response": "It was stopped."},
        ],
    )
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "run it")
        await until(lambda: pidfile.exists() and pidfile.read_text().strip(), seconds=20.0)
        pid = int(pidfile.read_text())
        assert running(pid)
        assert engine.stop(root)
        assert await drive_ends(root, timeout=10), "the drive waited for the 30 s tool"
        assert not running(pid), "the tool's child process outlived the stop"
        assert root.latest.run_state.kind == "interrupted" and root.latest.run_state.reason == "user_stop"
        [result] = [r for r in records(root) if isinstance(r, FuncResultRecord)]
        assert result.interrupted and result.is_error and "may or may not have taken effect" in result.content
        [finish] = [r for r in records(root) if isinstance(r, GenFinishRecord)]
        assert finish.status == "interrupted"
        assert_closed(root)
        assert engine.resume(root)
        await engine.wait_idle()
        assert root.latest.run_state.kind == "idle"
        assert [r.content for r in records(root) if type(r).__name__ == "AgentWordsRecord"] == ["It was stopped."]
    finally:
        await engine.close()


async def test_stop_while_a_drive_waits_for_its_dialog_is_not_lost(tmp_path: Path) -> None:
    """A Stop between the scheduler starting a drive and the drive taking the dialog's mutex used to be
    reset by the drive's start; the scope exists from the start, so the drive ends interrupted at once."""
    engine = _shell_workspace(tmp_path, [{"agent": "lead", "message": "hi", "response": "hello"}])
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        async with root.drive_mutex:  # the drive is started but waits here
            engine.submit_user_message(root, "hi")
            await until(lambda: root.is_driving, seconds=20.0)
            assert engine.stop(root)
        assert await drive_ends(root, timeout=10)
        assert root.latest.run_state.kind == "interrupted"
        assert not [r for r in records(root) if isinstance(r, GenStartRecord)], "a stopped drive generated"
    finally:
        await engine.close()


async def test_stop_cancels_parallel_tool_calls_and_closes_each(tmp_path: Path) -> None:
    """Three ``shell_cmd`` calls of one generation: a Stop kills all three and records each interrupted."""
    pids = [tmp_path / f"p{i}.pid" for i in range(3)]
    calls = [{"func_call": {"name": "shell_cmd", "arguments": {"command": SLEEPER.format(pidfile=p)}}} for p in pids]
    engine = _shell_workspace(tmp_path, [{"agent": "lead", "message": "three", "stream": calls}])
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "three")
        await until(lambda: all(p.exists() and p.read_text().strip() for p in pids), seconds=20.0)
        children = [int(p.read_text()) for p in pids]
        engine.stop(root)
        assert await drive_ends(root, timeout=10)
        assert not any(running(pid) for pid in children)
        results = [r for r in records(root) if isinstance(r, FuncResultRecord)]
        assert len(results) == 3 and all(r.interrupted for r in results)
        assert_closed(root)
    finally:
        await engine.close()


async def test_stop_of_every_dialog_during_a_fan_out_of_five(tmp_path: Path) -> None:
    """The lead tellasks five coders at once (TYPE C); each runs a 30 s shell command. An emergency stop
    ends all six drives at once; no tool process remains; each course says interrupted; a resume works."""
    lines = "".join(f"!?@coder job {i}\n\n" for i in range(5))
    responses = [
        {"agent": "lead", "message": "fan out", "response": lines},
        *(_shell_call(f"job {i}", SLEEPER.format(pidfile=tmp_path / f"job{i}.pid"), agent="coder") for i in range(5)),
        {"agent": "coder", "role": "tool", "contains": "INTERRUPTED", "response": "Stopped, as asked."},
        {"agent": "lead", "contains": "Stopped, as asked", "response": "All stopped."},
    ]
    # the scripted match is on the whole message: each coder's assignment text contains "job i"
    for entry in responses[1:6]:
        entry["contains"] = entry.pop("message")
    engine = _shell_workspace(tmp_path, responses)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "fan out")
        pidfiles = [tmp_path / f"job{i}.pid" for i in range(5)]
        await until(lambda: all(p.exists() and p.read_text().strip() for p in pidfiles), seconds=60)
        children = [int(p.read_text()) for p in pidfiles]
        subs = [d for d in root.local.values() if not d.is_root]
        assert len(subs) == 5
        assert engine.emergency_stop() >= 5
        for sub in subs:
            assert await drive_ends(sub, timeout=10)
        assert not any(running(pid) for pid in children)
        for sub in subs:
            assert sub.latest.run_state.kind == "interrupted"
            assert_closed(sub)
        assert len([r for r in records(root) if isinstance(r, SubdialogCreatedRecord)]) == 5
        assert engine.resume_all() == 5
        await engine.wait_idle(timeout=60)
        assert root.latest.run_state.kind == "idle" and not root.pending
    finally:
        await engine.close()


async def test_close_cancels_running_drives_records_them_and_releases_the_lock_last(tmp_path: Path) -> None:
    """``Engine.close()`` used to give drives ``timeout`` seconds and release the lock with a drive alive,
    which then wrote ``status: ok`` with no tool result. Now: every drive closed, then the lock."""
    pidfile = tmp_path / "sleep.pid"
    engine = _shell_workspace(tmp_path, [_shell_call("run it", SLEEPER.format(pidfile=pidfile))])
    await engine.start()
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "run it")
    await until(lambda: pidfile.exists() and pidfile.read_text().strip(), seconds=20.0)
    pid = int(pidfile.read_text())
    drive = root.drive_task
    assert drive is not None
    lock = filelock.FileLock(str(engine.rtws.lock_path))
    held_while_draining: list[bool] = []

    def try_lock() -> None:  # what a second daemon would do while the first drains
        try:
            lock.acquire(timeout=0)
            lock.release()
            held_while_draining.append(False)
        except filelock.Timeout:
            held_while_draining.append(True)

    original = engine.providers.close

    async def close_providers() -> None:  # runs after the drives ended, before the lock is released
        assert drive.done(), "the engine went on closing while a drive ran"
        try_lock()
        await original()

    engine.providers.close = close_providers  # type: ignore[method-assign]
    await engine.close(timeout=5)
    assert held_while_draining == [True]
    assert not running(pid)
    recs = course(root)
    [finish] = [r for r in recs if isinstance(r, GenFinishRecord)]
    [result] = [r for r in recs if isinstance(r, FuncResultRecord)]
    assert finish.status == "interrupted" and result.interrupted and "server_shutdown" in result.content
    assert root.files.read_latest().run_state.kind == "interrupted"  # type: ignore[union-attr]
    lock.acquire(timeout=0)  # free now
    lock.release()


async def test_a_failing_sibling_dispatch_stops_the_others(tmp_path: Path, monkeypatch: Any) -> None:
    """With ``asyncio.gather`` a failing dispatch left its siblings running after the drive had ended; in
    the scope's task group the failure cancels them and the drive waits for them before it settles."""
    from dominds.driver import subdialogs, tellask_exec

    lines = "".join(f"!?@coder job {i}\n\n" for i in range(3))
    engine = _shell_workspace(tmp_path, [{"agent": "lead", "message": "fan out", "response": lines}])
    await engine.start()
    real_dispatch = subdialogs.dispatch
    still_running: list[str] = []
    ended: list[tuple[str, bool]] = []
    """(headline, whether the drive was still running when the sibling ended)"""
    root_box: list[Dialog] = []

    async def flaky(engine_: Any, caller: Any, item: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if "job 1" in item.call.headline:
            raise RuntimeError("dispatch failed")
        still_running.append(item.call.headline)
        try:
            await asyncio.sleep(3600)  # a dispatch that would keep going
        finally:
            ended.append((item.call.headline, root_box[0].is_driving))
        await real_dispatch(engine_, caller, item, target, *args, **kwargs)

    monkeypatch.setattr(tellask_exec, "dispatch", flaky)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        root_box.append(root)
        engine.submit_user_message(root, "fan out")
        await engine.wait_idle(timeout=30)
        assert len(still_running) == 2
        assert len(ended) == 2 and all(driving for _, driving in ended), f"siblings outlived the drive: {ended}"
        assert root.latest.run_state.kind == "interrupted" and "internal error" in (root.latest.run_state.detail or "")
        assert_closed(root)
    finally:
        await engine.close()


def test_running_tells_a_live_process_from_a_gone_one(tmp_path: Path) -> None:
    """Guards the helper: ``running`` tells a live process from a finished one."""
    assert running(os.getpid())
    assert not running(2**22 + 12345)


async def test_a_message_queued_during_a_stopped_generation_stays_queued(tmp_path: Path) -> None:
    """A queued message is not consumed by a stopped drive: it is still queued after the stop."""
    engine = _shell_workspace(
        tmp_path,
        [
            {"agent": "lead", "message": "slow", "response": "word " * 400, "chunk_chars": 5, "delay_ms": 5},
            {"agent": "lead", "message": "later", "response": "ok"},
        ],
    )
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "slow")
        await until(lambda: bool(root.streaming_text.get("saying")), seconds=20.0)
        engine.submit_user_message(root, "later", msg_id="m-later")
        engine.stop(root)
        assert await drive_ends(root, timeout=10)
        assert [p.msg_id for p in list(root.queue)] == ["m-later"]
        assert "m-later" not in {r.msg_id for r in records(root) if isinstance(r, HumanTextRecord)}
        assert any(isinstance(r, RunMarkerRecord) and r.kind == "interrupted" for r in records(root))
        [finish] = [r for r in records(root) if isinstance(r, GenFinishRecord)]
        assert finish.status == "interrupted" and finish.partial
    finally:
        await engine.close()
