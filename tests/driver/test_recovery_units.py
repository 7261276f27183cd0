"""Recovery of half-finished work from crafted on-disk states, and other engine edge cases."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from helpers import records, sayings
from workspace_kit import set_responses

from dominds.ids import new_dialog_id, now_iso
from dominds.store.course_records import (
    AgentWordsRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenStartRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
)
from dominds.store.records import PendingSubdialog, RunState


async def test_dispatch_cut_after_its_commit_point_is_completed(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The daemon died after writing the caller's pending entry but before creating the subdialog."""
    responses = [
        {"agent": "coder", "contains": "finish the job", "response": "Job finished."},
        {"agent": "lead", "contains": "provided response", "response": "Great."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    sub_id = new_dialog_id()
    root.pending.append(
        PendingSubdialog(
            subdialog_id=sub_id,
            agent_id="coder",
            call_type="B",
            tellask_session="job",
            tellask_head="@coder !tellaskSession job finish the job\n",
            tellask_body="",
            call_id="c1.1.1.1",
            created_at=now_iso(),
        )
    )
    root.save_pending()
    root.set_run_state(RunState(kind="blocked", reason="waiting_for_subdialogs"))
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert restored.files.read_registry()["coder!job"].subdialog_id == sub_id
    [response] = [r for r in records(restored) if isinstance(r, TeammateResponseRecord)]
    assert response.response == "Job finished." and sayings(restored) == ["Great."]


async def test_dangling_tool_call_gets_an_interrupted_result_and_is_not_rerun(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    responses = [{"agent": "lead", "contains": "NOT delivered", "response": "I will check before retrying."}]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    root.append(GenStartRecord(ts=now_iso(), genseq=1))
    root.append(AgentWordsRecord(ts=now_iso(), genseq=1, content="Adding it.\n!?@coder also this\n"))
    root.append(FuncCallRecord(ts=now_iso(), genseq=1, id="t1", name="add_reminder", arguments={"content": "x"}))
    root.latest.generating = True
    root.latest.run_state = RunState(kind="proceeding")
    root.save_latest()
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    all_records = records(restored)
    [result] = [r for r in all_records if isinstance(r, FuncResultRecord)]
    assert result.interrupted and result.is_error and result.id == "t1"
    assert restored.reminders == [], "the tool was not run again"
    [note] = [r for r in all_records if isinstance(r, TeammateCallResultRecord)]
    assert "NOT delivered" in note.result, "the undelivered tellask is reported to the model"
    assert sayings(restored)[-1] == "I will check before retrying."


async def test_no_resume_leaves_interrupted_dialogs_for_the_user(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"message": "hi", "response": "hello"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    root.append(GenStartRecord(ts=now_iso(), genseq=1))
    root.latest.generating = True
    root.save_latest()
    await engine.close()
    engine2 = await make_engine([], root=tmp_path / "ws", resume=False)
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert restored.latest.run_state.kind == "interrupted" and restored.latest.run_state.reason == "server_restart"
    assert engine2.resume_all() == 1


async def test_type_a_fallback_by_naming_the_callers_agent(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@coder do it\n"},
            {"agent": "coder", "contains": "do it", "response": "!?@lead Which file?\n"},
            {"agent": "lead", "contains": "TellaskBack", "response": "main.py"},
            {"agent": "coder", "contains": "main.py", "response": "Edited main.py."},
            {"agent": "lead", "contains": "Edited main.py", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    assert sayings(root)[-1] == "Done."
    assert len(engine.store.subdialog_ids("run", root.root_id)) == 1, "asking back creates no subdialog"


async def test_type_b_reassigned_by_another_caller_supersedes_the_first(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine(
        [
            {"agent": "lead", "message": "start", "response": "!?@coder !tellaskSession shared slow part\n"},
            {"agent": "coder", "contains": "slow part", "response": "!?@human hold on?\n"},
            {"agent": "lead", "contains": "FAILED", "response": "Superseded, fine."},
        ]
    )
    first = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(first, "start")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", first.root_id)
    sub = engine.get_dialog(first.root_id, sub_id)
    # A second caller in the same tree (the subdialog itself delegates back into the session is odd;
    # use a fresh TYPE C sibling that calls the same session).
    set_responses(
        engine.rtws,
        [
            {"agent": "lead", "contains": "FAILED", "response": "Superseded, fine."},
            {"agent": "researcher", "contains": "check", "response": "!?@coder !tellaskSession shared take over\n"},
            {"agent": "coder", "message": "later", "response": "ok"},
        ],
    )
    from dominds.driver.subdialogs import materialize_subdialog

    sibling_entry = PendingSubdialog(
        subdialog_id=new_dialog_id(), agent_id="researcher", call_type="C", tellask_head="@researcher check\n",
        tellask_body="", call_id="sib-1", created_at=now_iso(),
    )
    first.pending.append(sibling_entry)
    first.save_pending()
    materialize_subdialog(engine, first, first, sibling_entry)
    await engine.wait_idle()
    assert sub.meta.assignment_from_sup is not None
    assert sub.meta.assignment_from_sup.caller_dialog_id == sibling_entry.subdialog_id
    failed = [r for r in records(first) if isinstance(r, TeammateResponseRecord) and r.status == "failed"]
    assert failed and "re-assigned" in failed[0].result


async def test_diligence_push_reprompts_then_asks_the_human(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine([{"agent": "lead", "message": "work", "response": "done?"}, {"agent": "lead", "contains": "Diligence push", "response": "still done"}])
    team = engine.rtws.team_yaml.read_text().replace("diligence_push_max: 0", "diligence_push_max: 2")
    engine.rtws.team_yaml.write_text(team)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "work")
    await engine.wait_idle()
    assert sayings(root) == ["done?", "still done", "still done"]
    [question] = engine.q4h_state()
    assert "Diligence" in question["tellaskHead"]


async def test_caller_unblocked_just_before_a_crash_is_revived(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (found by the soak): the answer removed the caller's last pending entry, the daemon died before
    the caller's needsDrive was saved, and recovery skipped the caller, which then waited forever."""
    responses = [{"agent": "lead", "contains": "provided response", "response": "revived"}]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    root.append(
        TeammateResponseRecord(
            ts=now_iso(), call_id="c", responder_id="coder", callee_dialog_id="x", tellask_head="@coder",
            status="completed", response="r", result="Hi @lead, @coder provided response: r", agent_id="lead",
            origin_member_id="lead",
        )
    )
    root.latest.run_state = RunState(kind="blocked", reason="waiting_for_subdialogs")
    root.latest.needs_drive = False
    root.save_latest()  # no subdlg.yaml: nothing blocks it any more
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert sayings(restored) == ["revived"] and restored.latest.run_state.kind == "idle"


async def test_stale_temp_files_of_killed_writes_are_removed_at_start(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bug: temp files from writes a kill interrupted were never cleaned up."""
    engine = await make_engine([{"message": "hi", "response": "hello"}], root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    await engine.close()
    stale = root.files.dir / ".latest.yaml.4242.deadbeef.tmp"
    stale.write_text("half a write")
    await make_engine([], root=tmp_path / "ws")
    assert not stale.exists()


async def test_a_current_course_without_its_file_is_a_visible_error_not_a_new_course(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bug: a hand edit `currentCourse: 999` was accepted and the dialog silently went on in course 999."""
    engine = await make_engine([{"message": "hi", "response": "hello"}], root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    await engine.close()
    latest = root.files.latest_yaml
    latest.write_text(latest.read_text().replace("currentCourse: 1", "currentCourse: 999"))
    engine2 = await make_engine([], root=tmp_path / "ws")
    reloaded = engine2.get_dialog(root.root_id)
    assert reloaded.load_error is not None and "currentCourse is 999" in reloaded.load_error
    assert not root.files.course(999).exists()


async def test_declaring_a_subdialog_dead_withdraws_its_questions(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a dead subdialog's question stayed listed forever."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
            {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
            {"agent": "lead", "contains": "declared dead", "response": "Understood."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    sub = engine.get_dialog(question["rootId"], question["selfId"])
    await engine.declare_dead(sub, "not needed")
    await engine.wait_idle()
    assert engine.q4h_state() == [] and not sub.files.q4h_yaml.exists()


async def _restarted_after_declaring_coder_dead(make_engine, tmp_path: Path, responses: list[dict[str, str]], note: str | None = None):  # type: ignore[no-untyped-def]
    """Drive "delegate" to rest, write the coder's dead state (``declare_dead``'s first write), close as a
    crash would leave it, restart: (the new engine, the restored root, the questions and the root's
    ask-backs before the restart)."""
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    before = (engine.q4h_state(), list(root.latest.inbound_tellask_backs))
    [coder] = [d for d in engine.load_root(root.root_id).local.values() if d.meta.agent_id == "coder"]
    coder.set_run_state(RunState(kind="dead", reason="declared_by_user", detail=note))
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    return engine2, engine2.get_dialog(root.root_id), before


async def test_a_subdialog_declared_dead_just_before_a_crash_fails_its_callers_call_at_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: the daemon died after a subdialog was declared dead (its state written) but before its caller
    got the failed reply; recovery delivered only completed answers, so the caller waited forever."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
        {"agent": "lead", "contains": "declared dead", "response": "Understood."},
    ]
    engine, restored, (asked, _) = await _restarted_after_declaring_coder_dead(make_engine, tmp_path, responses, "not needed")
    assert [q["agentId"] for q in asked] == ["coder"]
    [reply] = [r for r in records(restored) if isinstance(r, TeammateResponseRecord)]
    assert reply.status == "failed" and "declared dead by the user (note: not needed)" in reply.result
    assert sayings(restored)[-1] == "Understood." and not restored.pending
    assert engine.q4h_state() == [], "a dead subdialog's question is still asked"


async def test_an_ask_back_of_a_subdialog_declared_dead_just_before_a_crash_is_withdrawn_at_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: the daemon died after a subdialog was declared dead but before its ask-back was withdrawn from
    the asked dialog, which then answered a dialog that can never read the answer."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@tellasker Which language?\n"},
        {"agent": "lead", "contains": "Which language?", "response": "!?@human Which language shall the coder use?\n"},
        {"agent": "lead", "contains": "declared dead", "response": "Understood."},
    ]
    _, restored, (asked, ask_backs) = await _restarted_after_declaring_coder_dead(make_engine, tmp_path, responses)
    assert [q["agentId"] for q in asked] == ["lead"] and len(ask_backs) == 1, "the root answers the ask-back by asking the person"
    assert restored.latest.inbound_tellask_backs == [] and restored.files.read_latest().inbound_tellask_backs == []
    [reply] = [r for r in records(restored) if isinstance(r, TeammateResponseRecord)]
    assert reply.status == "failed" and "declared dead" in reply.result


async def test_a_subdialog_without_dialog_yaml_does_not_make_its_tree_refuse_messages(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bug: a missing subdialog dialog.yaml made the whole tree refuse messages."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "Built."},
        {"agent": "lead", "contains": "provided response", "response": "Great."},
        {"agent": "lead", "message": "status?", "response": "All fine."},
    ]
    engine = await make_engine(responses, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    await engine.close()
    engine.store.files("run", root.root_id, sub_id).dialog_yaml.unlink()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    reloaded = engine2.get_dialog(root.root_id)
    engine2.submit_user_message(reloaded, "status?")
    await engine2.wait_idle()
    assert reloaded.last_saying() == "All fine."


async def test_a_pending_subdialog_without_dialog_yaml_is_restored_not_a_refused_tree(make_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bug: a subdialog whose dialog.yaml was lost while its caller waited for it made the whole tree
    refuse messages (recovery tried to create its directory again and failed). Its dialog.yaml is rebuilt
    from the caller's pending entry and it answers."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
        {"agent": "coder", "message": "postgres", "response": "Built on postgres."},
        {"agent": "lead", "contains": "provided response", "response": "Great."},
    ]
    engine = await make_engine(responses, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    await engine.close()
    engine.store.files("run", root.root_id, sub_id).dialog_yaml.unlink()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    reloaded = engine2.get_dialog(root.root_id)
    assert reloaded.load_error is None
    [question] = engine2.q4h_state()
    engine2.answer_question(question["id"], "postgres")
    await engine2.wait_idle()
    assert reloaded.last_saying() == "Great."


async def test_an_answer_queued_before_a_crash_removes_its_question_at_restart(  # type: ignore[no-untyped-def]
    make_engine, tmp_path: Path, monkeypatch
) -> None:
    """Answering queues the answer durably, then removes the question (two writes). The bug this holds:
    the recovery step that drops a question whose answer is already queued could be deleted with every
    test green, and then a crash between the two writes left the question pending for ever (the dialog
    cannot drive while it has one) with its answer queued behind it."""
    from dominds.driver import questions

    responses = [
        {"agent": "lead", "message": "start", "response": "!?@human Which colour?\n"},
        {"agent": "lead", "message": "blue", "response": "Blue it is."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "start")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    # the daemon dies right after the answer is queued: the question's removal never happens
    monkeypatch.setattr(questions, "withdraw", lambda *_args, **_kw: None)
    engine.answer_question(question["id"], "blue")
    await engine.wait_idle()
    assert root.files.q4h_yaml.exists() and sayings(root) == ["!?@human Which colour?\n"]
    await engine.close()
    monkeypatch.undo()

    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert engine2.q4h_state() == [] and not restored.files.q4h_yaml.exists()
    assert sayings(restored)[-1] == "Blue it is.", "the queued answer was driven once its question was dropped"


async def test_a_tree_found_at_rest_at_start_is_noted_settled_for_the_next(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Recovery notes as settled the trees it finds at rest without loading them, so the next start reads
    not even their facts. The bug this holds: that note could be dropped with every test green (only trees
    recovery loaded were checked), and every start then re-read every idle tree of a big workspace."""
    from dominds.store.index import DialogIndex

    engine = await make_engine([{"agent": "lead", "message": "hi", "response": "hello"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    await engine.close()
    index = DialogIndex(engine.rtws)
    index.path.unlink()  # a cold index: the next start reads the tree's facts and finds it at rest
    [tree] = index.trees(root=("run", root.root_id))
    assert not tree.settled
    await make_engine([], root=tmp_path / "ws")
    [tree] = DialogIndex(engine.rtws).trees(root=("run", root.root_id))
    assert tree.settled, "a tree found at rest by recovery was not noted settled"


async def test_a_start_reads_no_facts_of_a_settled_tree_and_still_removes_a_temp_left_in_it_later(
    make_engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Bug: every start read every dialog's facts (one index query and a JSON parse each) to look for temp
    files of interrupted writes, settled trees included: 1.3 s of a 10,000-dialog restart's 3.1 s. A settled
    tree is now left unread; a temp file left in it afterwards makes it unsettled (its directory changed),
    so it is still found and removed."""
    from dominds.store.index import DialogIndex

    engine = await make_engine([{"agent": "lead", "message": "hi", "response": "hello"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    await engine.close()
    await (await make_engine([], root=tmp_path / "ws")).close()  # finds the tree at rest: settled
    [tree] = DialogIndex(engine.rtws).trees(root=("run", root.root_id))
    assert tree.settled
    loads: list[object] = []
    real_load = DialogIndex._load_heavy
    monkeypatch.setattr(DialogIndex, "_load_heavy", lambda self, *a, **k: loads.append(a) or real_load(self, *a, **k))
    await (await make_engine([], root=tmp_path / "ws")).close()
    assert loads == [], "a start read the facts of a settled tree"
    stale = root.files.dir / ".latest.yaml.4242.deadbeef.tmp"
    stale.write_text("half a write")  # a write cut by a kill after the tree was settled
    await (await make_engine([], root=tmp_path / "ws")).close()
    assert not stale.exists()


async def test_a_dialog_the_user_stopped_stays_stopped_across_a_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Recovery resumes interruptions nobody asked for (a crash, a shutdown) but must leave a dialog the user
    stopped as it was: not reset to idle, not driven again (a mutant that did either survived every test)."""
    import asyncio

    responses = [{"message": "slow", "response": "word " * 200, "chunk_chars": 5, "delay_ms": 5}]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "slow")
    for _ in range(3000):  # until the stream has begun (a condition, not a fixed wait)
        if root.streaming_text.get("saying"):
            break
        await asyncio.sleep(0.01)
    assert root.streaming_text.get("saying")
    assert engine.stop(root)
    await engine.wait_idle()
    stopped = root.latest.run_state
    assert (stopped.kind, stopped.reason) == ("interrupted", "user_stop")
    generations_before = sum(isinstance(r, GenStartRecord) for r in records(root))
    await engine.close()
    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert (restored.latest.run_state.kind, restored.latest.run_state.reason) == ("interrupted", "user_stop")
    assert sum(isinstance(r, GenStartRecord) for r in records(restored)) == generations_before, "not driven again"


async def _closed_once_the_subdialog_is_created(make_engine, responses: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    """The engine, closed as soon as the root's "delegate" created its subdialog (still answering), and the root."""
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    created = asyncio.Event()
    engine.pubchan.subscribe(lambda e: created.set() if e["type"] == "subdialog_created_evt" else None, wants_all=True)
    engine.submit_user_message(root, "delegate", msg_id="m1")
    await created.wait()
    await engine.close()
    return engine, root


async def test_a_dispatch_a_power_cut_left_without_its_pending_entry_and_subdialog_is_reported_not_delivered(make_engine, tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """Bug (issue 34): the documented "Limit" of group commit: a power cut mid-commit can leave a dispatch
    recorded in the caller's course without its pending entry (and without its subdialog). Nothing ever
    answered that call: the model was never told it was not delivered. The daemon log says so too (a
    sampled mutant removed that warning with every test green)."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "Built.", "delay_ms": 50, "chunk_chars": 1},
        {"agent": "lead", "contains": "NOT delivered", "response": "I will ask again later."},
    ]
    engine, root = await _closed_once_the_subdialog_is_created(make_engine, responses)
    # What the power cut left: the caller's course says the call was dispatched; the rest never reached the disk.
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    shutil.rmtree(engine.store.files("run", root.root_id, sub_id).dir)
    root.files.subdlg_yaml.unlink()
    assert any(isinstance(r, SubdialogCreatedRecord) for r in root.files.read_course(1))

    engine2 = await make_engine([], root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    assert "its dispatch lost; noted as not delivered" in caplog.text
    notes = [r for r in records(restored) if isinstance(r, TeammateCallResultRecord)]
    assert len(notes) == 1 and "NOT delivered" in notes[0].result and notes[0].status == "failed"
    assert sayings(restored)[-1] == "I will ask again later."
    assert restored.latest.run_state.kind == "idle"


async def test_a_dispatch_a_power_cut_left_with_its_subdialog_but_without_its_pending_entry_is_answered(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (a sibling of issue 34, item 7): the same group-commit "Limit", with the subdialog's new files on disk
    and the caller's pending entry (`subdlg.yaml`) not. Recovery noted nothing (the subdialog exists) and
    restored nothing: the subdialog's answer was dropped as "late", the call site never got a reply, and the
    caller, no longer waiting, was driven again with its call unanswered (here it delegated a second time)."""
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "Built.", "delay_ms": 50, "chunk_chars": 1},
        {"agent": "lead", "contains": "Built.", "response": "Thanks."},
    ]
    engine, root = await _closed_once_the_subdialog_is_created(make_engine, responses)
    # What the power cut left: the call in the caller's course and the subdialog, but no pending entry.
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    root.files.subdlg_yaml.unlink()

    engine2 = await make_engine([], root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    course = records(restored)
    calls = [r for r in course if isinstance(r, SubdialogCreatedRecord)]
    assert [c.subdialog_id for c in calls] == [sub_id], "no second delegation"
    replies = [r for r in course if isinstance(r, TeammateResponseRecord)]
    assert [(r.callee_dialog_id, r.call_id, r.response) for r in replies] == [(sub_id, calls[0].call_id, "Built.")]
    assert not [r for r in course if isinstance(r, TeammateCallResultRecord)]
    assert sayings(restored)[-1] == "Thanks."
    assert all(d.latest.run_state.kind == "idle" and not d.pending for d in restored.local.values())


async def test_a_session_call_a_power_cut_left_without_its_pending_entry_or_the_sessions_assignment_is_reported_not_delivered(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (a sibling of issue 34, item 7): a TYPE B re-tellask of an existing session, recorded in the caller's
    course, with neither its pending entry nor the session's new assignment on disk. The session exists, so
    nothing noted the call: it never got a reply and the model was never told it was not delivered."""
    responses = [
        {"agent": "lead", "message": "first", "response": "!?@coder !tellaskSession job step one\n"},
        {"agent": "coder", "contains": "step one", "response": "One done."},
        {"agent": "lead", "contains": "One done.", "response": "First done."},
        {"agent": "lead", "message": "again", "response": "!?@coder !tellaskSession job step two\n"},
        {"agent": "coder", "contains": "step two", "response": "Two done.", "delay_ms": 50, "chunk_chars": 1},
        {"agent": "lead", "contains": "NOT delivered", "response": "I will ask again later."},
    ]
    engine = await make_engine(responses)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "first", msg_id="m1")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    session_dir = engine.store.files("run", root.root_id, sub_id).dir
    shutil.copytree(session_dir, tmp_path / "session-before")
    created = asyncio.Event()
    engine.pubchan.subscribe(lambda e: created.set() if e["type"] == "subdialog_created_evt" else None, wants_all=True)
    engine.submit_user_message(root, "again", msg_id="m2")
    await created.wait()
    await engine.close()
    # What the power cut left: the second call in the caller's course; the session as it was before it.
    root.files.subdlg_yaml.unlink()
    shutil.rmtree(session_dir)
    shutil.copytree(tmp_path / "session-before", session_dir)

    engine2 = await make_engine([], root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    course = records(restored)
    second = [r for r in course if isinstance(r, SubdialogCreatedRecord)][-1]
    notes = [r for r in course if isinstance(r, TeammateCallResultRecord) and r.call_id == second.call_id]
    assert len(notes) == 1 and "NOT delivered" in notes[0].result
    assert sayings(restored)[-1] == "I will ask again later."
    assert all(d.latest.run_state.kind == "idle" and not d.pending for d in restored.local.values())


@pytest.mark.parametrize("tellask", ["tools", "text"])
async def test_a_question_answered_while_its_generation_was_open_is_answered_once(  # type: ignore[no-untyped-def]
    make_engine, tmp_path: Path, monkeypatch, tellask: str
) -> None:
    """The bug (found by the crash-point sweep once a turn's writes were grouped differently, as a busy
    machine groups them): the model asked the person (``askHuman``, or ``!?@human`` in its text); the
    person's answer was queued before the generation's finish was written, and the daemon died. At the
    restart recovery dropped the answered question, then noted every call of the still-open generation
    that had no question and no reply as NOT delivered, the question to the person among them: the call
    was answered twice, by that note and by the queued answer."""
    import json

    from dominds.driver import questions
    from dominds.store.course_records import GenFinishRecord, HumanTextRecord, TeammateCallResultRecord

    ask = (
        {"stream": [{"func_call": {"name": "askHuman", "arguments": {"tellaskContent": "Which database?"}}}]}
        if tellask == "tools"
        else {"response": "!?@human Which database?\n"}
    )
    responses = [
        {"agent": "lead", "message": "go", **ask},
        {"agent": "lead", "contains": "postgres", "response": "Postgres it is."},  # the answer as a message
        {"agent": "lead", "role": "tool", "contains": "postgres", "response": "Postgres it is."},  # as askHuman's result
    ]
    engine = await make_engine(responses)
    if tellask == "tools":
        team = engine.rtws.team_yaml
        team.write_text(team.read_text().replace("member_defaults:\n", "member_defaults:\n  tellask: tools\n"))
        engine.config.invalidate()
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    monkeypatch.setattr(questions, "withdraw", lambda *_args, **_kw: None)  # dies before the question goes
    engine.answer_question(question["id"], "postgres")
    await engine.wait_idle()
    await engine.close()
    monkeypatch.undo()
    # ... and before the generation that asked was finished: its finish, and what follows, never written
    course = root.files.course(1)
    lines = course.read_text().splitlines()
    finish = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "gen_finish_record")
    course.write_text("".join(line + "\n" for line in lines[:finish]))
    latest = root.files.read_latest()
    assert latest is not None
    root.files.write_latest(latest.model_copy(update={"generating": True, "run_state": RunState(kind="proceeding")}))

    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    course_records = records(restored)
    notes = [r for r in course_records if isinstance(r, TeammateCallResultRecord)]
    answers = [r for r in course_records if isinstance(r, HumanTextRecord) and r.origin == "q4h_answer"]
    assert [n.call_id for n in notes] == [], f"the question to the person was noted as not delivered: {notes}"
    assert [a.question_id for a in answers] == [question["id"]], answers
    assert sayings(restored)[-1:] == ["Postgres it is."], "and the dialog went on with the answer"
    assert any(isinstance(r, GenFinishRecord) and r.status == "interrupted" for r in course_records)
    assert engine2.q4h_state() == []
