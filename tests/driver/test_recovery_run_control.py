"""Recovery of run control cut by a crash: a Stop or a declaration of death made while the dialog was driving.

Both write the dialog's state at once (``run_control``), and the drive records its end only when its
cancellation finishes; a crash in between leaves an open generation under the state the person asked for.
Each test drives an engine to rest, writes that state by hand, closes the engine and restarts it.
"""

from __future__ import annotations

from pathlib import Path

from helpers import generations, records, sayings

from dominds.ids import now_iso
from dominds.store.course_records import GenFinishRecord, GenStartRecord, TeammateResponseRecord
from dominds.store.records import RunState


async def test_a_stop_acknowledged_just_before_a_crash_keeps_the_dialog_stopped(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: Stop writes ``stop_requested{user_stop}`` and answers the person; the drive records
    ``interrupted{user_stop}`` once its cancellation ends. The daemon died in between: recovery closed the
    open generation as ``interrupted{server_restart}`` and drove again the dialog the person had stopped."""
    responses = [{"message": "hi", "response": "hello"}, {"contains": "", "response": "driven again"}]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    root.append(GenStartRecord(ts=now_iso(), genseq=2))  # the drive's next generation, under way
    root.latest.generating = True
    root.set_run_state(RunState(kind="stop_requested", reason="user_stop"))  # run_control.stop's write
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    state = restored.files.read_latest().run_state
    assert (state.kind, state.reason) == ("interrupted", "user_stop"), "the person's Stop is kept"
    assert generations(restored) == 2 and sayings(restored) == ["hello"], "not driven again"
    [finish] = [r for r in records(restored) if isinstance(r, GenFinishRecord) and r.genseq == 2]
    assert finish.status == "interrupted", "the cut generation is closed"


async def test_a_subdialog_declared_dead_while_driving_just_before_a_crash_stays_dead(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: a subdialog declared dead while it was generating has its dead state written with its generation
    still open (its drive records its end once cancelled). The daemon died in between: recovery closed the
    open generation and overwrote the dead state with ``interrupted{server_restart}``, so the dead subdialog
    was driven again, and its caller, no longer seeing it dead, was never given the failed reply."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
        {"agent": "coder", "contains": "", "response": "driven again"},
        {"agent": "lead", "contains": "declared dead", "response": "Understood."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [coder] = [d for d in engine.load_root(root.root_id).local.values() if d.meta.agent_id == "coder"]
    coder_generations = generations(coder)
    coder.append(GenStartRecord(ts=now_iso(), genseq=coder_generations + 1))  # generating when declared dead
    coder.latest.generating = True
    coder.set_run_state(RunState(kind="dead", reason="declared_by_user", detail="not needed"))  # declare_dead's first write
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    dead = engine2.get_dialog(root.root_id, coder.self_id)
    assert dead.files.read_latest().run_state.kind == "dead", "the declaration is kept"
    assert generations(dead) == coder_generations + 1 and "driven again" not in sayings(dead), "not driven again"
    [reply] = [r for r in records(restored) if isinstance(r, TeammateResponseRecord)]
    assert reply.status == "failed" and "declared dead by the user (note: not needed)" in reply.result
    assert sayings(restored)[-1] == "Understood." and not restored.pending
    assert engine2.q4h_state() == []
