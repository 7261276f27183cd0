"""Recovery of run control cut by a crash: a Stop or a declaration of death made while the dialog was driving.

Both write the dialog's state at once (``run_control``), and the drive records its end only when its
cancellation finishes; a crash in between leaves an open generation under the state the person asked for.
Each test drives an engine to rest, writes that state by hand, closes the engine and restarts it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generations, records, sayings

from dominds.ids import new_dialog_id, now_iso
from dominds.store.course_records import (
    AgentWordsRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    TeammateResponseRecord,
)
from dominds.store.records import PendingSubdialog, RunState


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


class _Killed(Exception):
    """The daemon's death at a chosen write, in process: the operation stops there, nothing after it runs."""


async def test_a_declaration_of_death_cut_after_its_first_write_loses_no_acknowledged_message(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: ``declare_dead`` dropped the subdialog's queue (its first write) before writing its dead state. The
    daemon died in between: the subdialog came back alive with a person's acknowledged message dropped (an
    ask-back's prompt dropped the same way left its obligation open with nothing to answer it)."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [coder] = [d for d in engine.load_root(root.root_id).local.values() if d.meta.agent_id == "coder"]
    engine.submit_user_message(coder, "also add tests", msg_id="m2")  # waits behind the open question
    await engine.wait_idle()
    assert "m2" in coder.queue

    def killed(*_args: object, **_kwargs: object) -> None:
        raise _Killed

    coder.set_run_state = killed  # type: ignore[method-assign]
    try:
        await engine.declare_dead(coder, "not needed")
    except _Killed:
        pass
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id, coder.self_id)
    assert not restored.is_dead, "killed before its dead state was written"
    assert "m2" in restored.queue or "m2" in restored.recorded_msg_ids(), "an acknowledged message was dropped"


async def test_the_queue_of_a_subdialog_declared_dead_just_before_a_crash_is_dropped_at_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The other side of the order above: the daemon died after the dead state was written, before the queue
    was dropped. Recovery finishes the declaration: nothing stays queued in a dialog that is never driven."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
        {"agent": "lead", "contains": "declared dead", "response": "Understood."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [coder] = [d for d in engine.load_root(root.root_id).local.values() if d.meta.agent_id == "coder"]
    engine.submit_user_message(coder, "also add tests", msg_id="m2")
    await engine.wait_idle()
    coder.set_run_state(RunState(kind="dead", reason="declared_by_user"))  # declare_dead's first write
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    dead = engine2.get_dialog(root.root_id, coder.self_id)
    assert dead.is_dead and list(dead.queue) == [] and dead.files.read_latest().queued_prompts == []
    assert sayings(engine2.get_dialog(root.root_id))[-1] == "Understood."


ASK_BACK_TO_CODER = [
    {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
    {"agent": "coder", "contains": "build it", "response": "!?@researcher check it\n"},
    {"agent": "researcher", "contains": "check it", "response": "!?@tellasker Which suite?\n"},
    {"agent": "coder", "contains": "Which suite?", "response": "!?@human Which suite shall the researcher run?\n"},
    {"agent": "researcher", "contains": "declared dead", "response": "Then I stop here."},
    {"agent": "lead", "contains": "declared dead", "response": "Understood."},
]
"""The coder, serving its researcher's ask-back, asks the person and waits: the researcher waits for the coder."""


async def _coder_serving_the_researchers_ask_back(make_engine):  # type: ignore[no-untyped-def]
    engine = await make_engine(ASK_BACK_TO_CODER)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    tree = engine.load_root(root.root_id).local.values()
    [coder] = [d for d in tree if d.meta.agent_id == "coder"]
    [researcher] = [d for d in tree if d.meta.agent_id == "researcher"]
    assert [i.from_dialog_id for i in coder.latest.inbound_tellask_backs] == [researcher.self_id]
    return engine, root, coder, researcher


def _the_researchers_ask_back_failed(researcher) -> None:  # type: ignore[no-untyped-def]
    [reply] = [r for r in records(researcher) if isinstance(r, TeammateResponseRecord) and r.call_type == "A"]
    assert reply.status == "failed" and "declared dead" in reply.result, reply.result
    assert not [p for p in researcher.pending if p.call_type == "A"] and sayings(researcher)[-1] == "Then I stop here."


async def test_declaring_dead_a_subdialog_asked_back_fails_the_ask_back(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a subdialog declared dead while its own subdialog's ask-back waited for its answer left that asker
    waiting forever (the declaration withdrew the ask-backs the dead dialog made, not those made to it)."""
    engine, root, coder, researcher = await _coder_serving_the_researchers_ask_back(make_engine)
    await engine.declare_dead(coder, "not needed")
    await engine.wait_idle()
    _the_researchers_ask_back_failed(researcher)
    assert coder.latest.inbound_tellask_backs == [] and coder.files.read_latest().inbound_tellask_backs == []


async def test_an_ask_back_to_a_subdialog_declared_dead_just_before_a_crash_fails_at_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: the daemon died after the coder's dead state was written, before the ask-back it was serving was
    answered; recovery delivered the dead coder's last saying (its question to the person) as the answer."""
    engine, root, coder, researcher = await _coder_serving_the_researchers_ask_back(make_engine)
    coder.set_run_state(RunState(kind="dead", reason="declared_by_user"))  # declare_dead's first write
    await engine.close()
    engine2 = await make_engine(ASK_BACK_TO_CODER, root=tmp_path / "ws")
    await engine2.wait_idle()
    _the_researchers_ask_back_failed(engine2.get_dialog(root.root_id, researcher.self_id))
    assert engine2.get_dialog(root.root_id, coder.self_id).files.read_latest().inbound_tellask_backs == []


async def test_an_ask_back_to_a_dialog_already_dead_is_answered_with_a_note(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a subdialog whose caller was declared dead asked it back and waited forever: the ask-back was
    queued in a dialog that is never driven again."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@researcher check it\n"},
        {"agent": "researcher", "contains": "check it", "response": "!?@human Which suite?\n"},
        {"agent": "researcher", "contains": "the fast one", "response": "!?@tellasker Which language?\n"},
        {"agent": "researcher", "contains": "declared dead", "response": "Then I stop here."},
        {"agent": "lead", "contains": "declared dead", "response": "Understood."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    tree = engine.load_root(root.root_id).local.values()
    [coder] = [d for d in tree if d.meta.agent_id == "coder"]
    [researcher] = [d for d in tree if d.meta.agent_id == "researcher"]
    await engine.declare_dead(coder, "not needed")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    engine.answer_question(question["id"], "the fast one")
    await engine.wait_idle()
    assert not researcher.pending and sayings(researcher)[-1] == "Then I stop here."
    assert coder.latest.inbound_tellask_backs == [] and list(coder.queue) == []


@pytest.mark.parametrize("left", ["proceeding", "idle with its revival", "blocked with its revival"])
async def test_a_subdialogs_finished_answer_cut_from_its_settling_by_a_crash_is_delivered_not_generated_again(make_engine, tmp_path: Path, left: str) -> None:  # type: ignore[no-untyped-def]
    """Bugs: a subdialog's last generation had finished (its answer recorded) and the daemon died before the
    drive settled.
    - ``proceeding``: recovery made it ``interrupted{server_restart}`` and drove it again with no prompt; that
      second generation's words, not the answer, went to the caller (as ask-backs once did before
      ``_answer_finished_ask_back``).
    - with ``needsDrive`` still set (written when its prompt was queued; the queue log says it was taken) and
      its state what it was before (idle, or blocked on the question it had asked): recovery waited for that
      drive to supply the answer, then cleared the revival as one with nothing new, and the caller waited
      forever (seen in the crash-point sweep, in every scenario with a call)."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
        {"agent": "coder", "contains": "", "response": "Anything else?"},
        {"agent": "lead", "contains": "provided response", "response": "Thanks."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    coder = engine.get_dialog(question["rootId"], question["selfId"])
    # What the coder's drive for the answer "sqlite" had written when the daemon died: the question dropped,
    # the answer's generation recorded to its end, the state not yet settled.
    coder.q4h = []
    coder.save_q4h()
    genseq = generations(coder) + 1
    coder.append(GenStartRecord(ts=now_iso(), genseq=genseq))
    coder.append(HumanTextRecord(ts=now_iso(), genseq=genseq, msg_id="ans-1", content="sqlite", origin="q4h_answer", question_id=question["id"]))
    coder.append(AgentWordsRecord(ts=now_iso(), genseq=genseq, content="Built it on sqlite."))
    coder.append(GenFinishRecord(ts=now_iso(), genseq=genseq, status="ok"))
    if left == "proceeding":
        coder.latest.generating = True  # saved at the generation's start; its finish is saved when the drive settles
        coder.set_run_state(RunState(kind="proceeding"))
    else:
        coder.latest.needs_drive = True
        coder.set_run_state(coder.idle_run_state() if left.startswith("idle") else RunState(kind="blocked", reason="needs_human_input"))
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    [reply] = [r for r in records(restored) if isinstance(r, TeammateResponseRecord)]
    assert reply.status == "completed" and reply.response == "Built it on sqlite."
    assert sayings(restored)[-1] == "Thanks." and not restored.pending
    answered = engine2.get_dialog(root.root_id, coder.self_id)
    assert generations(answered) == genseq, "the finished answer was generated again"
    assert answered.files.read_latest().run_state.kind == "idle"


async def test_a_root_whose_reply_had_finished_when_the_daemon_died_is_not_driven_again(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: the root's reply to a message had finished (its generation recorded to its end) and the daemon died
    before the drive settled; recovery resumed it, and the model was asked again with no prompt: a second,
    unasked reply. Its drive had ended: it is left idle."""
    responses = [{"message": "hi", "response": "hello"}, {"contains": "", "response": "driven again"}]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    root.append(GenStartRecord(ts=now_iso(), genseq=2))
    root.append(HumanTextRecord(ts=now_iso(), genseq=2, msg_id="m2", content="and again"))
    root.append(AgentWordsRecord(ts=now_iso(), genseq=2, content="hello again"))
    root.append(GenFinishRecord(ts=now_iso(), genseq=2, status="ok"))
    root.latest.generating = True
    root.set_run_state(RunState(kind="proceeding"))
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert sayings(restored) == ["hello", "hello again"] and generations(restored) == 2, "driven again"
    assert restored.files.read_latest().run_state.kind == "idle"


async def test_a_message_cut_after_its_revival_was_written_does_not_drive_the_root_with_no_prompt(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: accepting a message writes ``needsDrive`` first, then the message's line in the queue log. The
    daemon died in between (the message was never acknowledged): recovery drove the root with nothing new,
    and the model was asked again with no prompt, an unasked second reply."""
    responses = [{"message": "hi", "response": "hello"}, {"contains": "", "response": "driven again"}]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    root.latest.needs_drive = True
    root.save_latest()  # intake.queue_durably's first write
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert sayings(restored) == ["hello"] and generations(restored) == 1, "driven with no prompt"
    assert not restored.files.read_latest().needs_drive


async def test_a_session_call_cut_after_its_commit_point_replaces_the_dead_session_in_the_registry(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: a session whose subdialog was declared dead is started anew by the next call to it (a new
    subdialog, then the registry names it). The daemon died after the call's commit point: recovery created
    the subdialog but kept the registry naming the dead one, so the session's next call started yet another
    subdialog and the work of this one was cut off from its session."""
    responses = [
        {"agent": "lead", "message": "s1", "response": "!?@coder !tellaskSession job build it\n"},
        {"agent": "coder", "contains": "build it", "response": "Built."},
        {"agent": "coder", "contains": "again", "response": "Built again."},
        {"agent": "lead", "contains": "provided response", "response": "Thanks."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "s1")
    await engine.wait_idle()
    dead_id = root.type_b["coder!job"].subdialog_id
    await engine.declare_dead(engine.get_dialog(root.root_id, dead_id))
    await engine.wait_idle()
    sub_id = new_dialog_id()
    root.pending.append(
        PendingSubdialog(
            subdialog_id=sub_id, agent_id="coder", call_type="B", tellask_session="job",
            tellask_head="@coder !tellaskSession job again\n", tellask_body="", call_id="c2.1.3.1", created_at=now_iso(),
        )
    )
    root.save_pending()  # the call's commit point; the daemon died before the subdialog and the registry
    root.set_run_state(RunState(kind="blocked", reason="waiting_for_subdialogs"))
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert [r.response for r in records(restored) if isinstance(r, TeammateResponseRecord)][-1] == "Built again."
    assert restored.files.read_registry()["coder!job"].subdialog_id == sub_id, "the registry still names the dead session"
