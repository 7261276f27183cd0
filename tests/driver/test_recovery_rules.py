"""Recovery at start (``driver/recovery.py``) from crafted on-disk states: the rules a module-wide
``bin/mutate dominds.driver.recovery`` sample found untested (each test names the mutant it holds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dominds.store.dialog_store import DialogFiles
from dominds.store.records import LatestState, RunState

SESSION_RESPONSES = [
    {"agent": "lead", "message": "setup", "response": "!?@researcher !tellaskSession s1 dig\n"},
    {"agent": "researcher", "contains": "dig", "response": "Dug."},
    {"agent": "lead", "contains": "provided response", "response": "Thanks."},
]
"""A root that held one TYPE B session with the researcher, answered and at rest."""


def _left_in(files: DialogFiles, state: RunState) -> LatestState:
    """``latest.yaml`` rewritten with ``state``, as a kill could have left it; returns what was read."""
    latest = files.read_latest()
    assert latest is not None
    latest.run_state = state
    files.write_latest(latest)
    return latest


async def _session_tree(make_engine: Any) -> tuple[Any, Any]:
    """(the closed engine, the root) of a workspace holding ``SESSION_RESPONSES``' tree at rest."""
    engine = await make_engine(SESSION_RESPONSES)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "setup")
    await engine.wait_idle()
    await engine.close()
    return engine, root


async def test_the_engine_counts_the_trees_of_run_it_went_through_at_start(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``Engine.trees_at_start`` (``dominds serve`` warns about a big workspace from it) is the number of
    trees in ``run/``. Mutant held: recovery's counters starting at 1 (``stale = looked_at = loaded = 0``
    off by one), which counted a tree that is not there."""
    engine = await make_engine([{"agent": "lead", "message": "hi", "response": "hello"}])
    assert engine.trees_at_start == 0, "an empty workspace"
    first = engine.create_dialog("lead", "tasks/t.tsk")
    engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(first, "hi")
    await engine.wait_idle()
    await engine.close()
    engine2 = await make_engine([], root=tmp_path / "ws")
    assert engine2.trees_at_start == 2


async def test_recovery_loads_only_the_trees_that_need_a_look(make_engine, tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """A start reads every tree's facts from a cold index but loads only the trees that may have been
    mid-flight or are broken (memory stays flat with thousands of idle trees; the log says how many).
    Mutants held: in ``needs_attention``, ``"q4h.yaml" in files`` flipped (every idle tree was loaded) and
    that line's ``or`` made ``and`` (a tree with a corrupt file was taken for one at rest)."""
    import logging

    from dominds.store.index import DialogIndex

    engine = await make_engine([])
    engine.create_dialog("lead", "tasks/t.tsk")
    engine.create_dialog("lead", "tasks/t.tsk")
    bad = engine.create_dialog("lead", "tasks/t.tsk")
    await engine.close()
    bad.files.latest_yaml.write_text("currentCourse: [broken\n")
    DialogIndex(engine.rtws).path.unlink()  # cold: every tree's facts are read again
    caplog.set_level(logging.INFO, logger="dominds.recovery")
    engine2 = await make_engine([], root=tmp_path / "ws")
    assert engine2.trees_at_start == 3
    assert "recovery: 1 of 3 trees in run/ loaded" in caplog.text, caplog.text
    assert "latest.yaml" in (engine2.get_dialog(bad.root_id).load_error or "")


async def test_a_dialog_that_died_proceeding_before_its_generation_began_is_interrupted(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The daemon died after a dialog's run state became ``proceeding`` but before its generation started
    (nothing says ``generating``). Mutant held: ``needs_attention``'s ``return True`` for a proceeding /
    stop_requested / error run state made ``False``: such a tree was taken for one at rest and showed
    "proceeding" for ever with nothing driving it."""
    engine = await make_engine([])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    await engine.close()
    assert not _left_in(root.files, RunState(kind="proceeding")).generating
    engine2 = await make_engine([], root=tmp_path / "ws", resume=False)
    restored = engine2.get_dialog(root.root_id).latest.run_state
    assert (restored.kind, restored.reason) == ("interrupted", "server_restart")


async def test_an_ask_back_answer_finished_before_a_crash_is_delivered_at_restart(make_engine, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The root had finished its answer to a subdialog's ask-back when the daemon died, before the answer
    reached the asker. Mutant held: the recovery loop that delivers such answers ran only for dialogs that
    failed to load (``if not dialog.load_error`` with its ``not`` dropped): the asker waited for ever."""
    from helpers import records, sayings

    from dominds.driver import drive
    from dominds.store.course_records import TeammateResponseRecord

    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
        {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
        {"agent": "lead", "contains": "Which language?", "response": "Use Rust."},
        {"agent": "coder", "contains": "Use Rust.", "response": "Parser written in Rust."},
        {"agent": "lead", "contains": "Parser written", "response": "Done."},
    ]
    engine = await make_engine(responses)

    async def dies_before_delivering(*_args: object) -> None:
        return None

    monkeypatch.setattr(drive, "answer_tellask_back", dies_before_delivering)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    assert sayings(root)[-1] == "Use Rust." and root.latest.inbound_tellask_backs, "answered, not delivered"
    await engine.close()
    monkeypatch.undo()

    engine2 = await make_engine(responses, root=tmp_path / "ws")
    await engine2.wait_idle()
    restored = engine2.get_dialog(root.root_id)
    [sub_id] = engine2.store.subdialog_ids("run", root.root_id)
    sub = engine2.get_dialog(root.root_id, sub_id)
    assert [r.response for r in records(sub) if isinstance(r, TeammateResponseRecord)] == ["Use Rust."]
    assert sayings(restored)[-1] == "Done." and not restored.latest.inbound_tellask_backs


async def test_a_registry_entry_locked_when_the_daemon_died_is_unlocked_on_disk(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``locked`` in ``registry.yaml`` says a session was being driven when written; recovery resets it.
    Mutant held: ``if root.type_b != registry_before`` flipped, so the reset was made in memory only and
    the file kept saying the session was busy."""
    _, root = await _session_tree(make_engine)
    # what a kill mid-drive leaves: the session's entry locked, the root proceeding
    registry = root.files.read_registry()
    registry["researcher!s1"] = registry["researcher!s1"].model_copy(update={"locked": True})
    root.files.write_registry(registry)
    _left_in(root.files, RunState(kind="proceeding"))
    await make_engine(SESSION_RESPONSES, root=tmp_path / "ws", resume=False)
    assert root.files.read_registry()["researcher!s1"].locked is False


async def test_a_dialog_the_user_stopped_is_not_marked_to_drive_at_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Only interruptions nobody asked for are resumed at start. Mutant held: ``kind == "interrupted" and
    reason in RESUMABLE_REASONS`` with ``and`` made ``or``: a user-stopped dialog in a tree recovery loads
    (here its subdialog died mid-flight) was saved with ``needsDrive``, so every later start took its tree
    for one mid-flight."""
    engine, root = await _session_tree(make_engine)
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    _left_in(root.files, RunState(kind="interrupted", reason="user_stop"))
    _left_in(engine.store.files("run", root.root_id, sub_id), RunState(kind="proceeding"))
    engine2 = await make_engine(SESSION_RESPONSES, root=tmp_path / "ws")
    await engine2.wait_idle()
    on_disk = root.files.read_latest()
    assert on_disk is not None and not on_disk.needs_drive
    assert (on_disk.run_state.kind, on_disk.run_state.reason) == ("interrupted", "user_stop")


async def test_a_generation_started_but_never_finished_is_closed_even_when_latest_says_otherwise(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``latest.yaml`` may not have been saved yet when the daemon died: a generation start without its
    finish in the course is closed as interrupted whatever ``latest.yaml`` says. Mutant held: in
    ``_has_open_generation`` the ``if isinstance(record, GenFinishRecord)`` negated (an open generation was
    never found from the records alone, and the course kept a generation with no end)."""
    from helpers import records

    from dominds.ids import now_iso
    from dominds.store.course_records import AgentWordsRecord, GenFinishRecord, GenStartRecord
    engine = await make_engine([])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    root.append(GenStartRecord(ts=now_iso(), genseq=1))
    root.append(AgentWordsRecord(ts=now_iso(), genseq=1, content="Half a thought"))
    await engine.close()
    # an earlier --no-resume start
    assert not _left_in(root.files, RunState(kind="interrupted", reason="server_restart")).generating
    engine2 = await make_engine([], root=tmp_path / "ws", resume=False)
    restored = engine2.get_dialog(root.root_id)
    finishes = [r for r in records(restored) if isinstance(r, GenFinishRecord)]
    assert [(f.genseq, f.status) for f in finishes] == [(1, "interrupted")]
    on_disk = root.files.read_latest()
    assert on_disk is not None and not on_disk.generating and not restored.latest.generating, (
        "closed: no longer generating (mutant held: ``generating = False`` made ``True``)"
    )


async def test_a_question_saved_before_its_blocked_state_leaves_the_dialog_blocked_at_restart(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The daemon died after a question reached ``q4h.yaml`` but before the dialog's run state said it was
    waiting for it. Mutant held: ``needs_attention``'s first test with ``or`` made ``and``: a pending
    question no longer made recovery look at the tree, and the dialog read idle while it could not run."""
    engine = await make_engine([{"agent": "lead", "message": "paint", "response": "!?@human Which colour?\n"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "paint")
    await engine.wait_idle()
    assert root.latest.run_state.kind == "blocked"
    await engine.close()
    _left_in(root.files, RunState(kind="idle"))
    engine2 = await make_engine([], root=tmp_path / "ws", resume=False)
    assert len(engine2.q4h_state()) == 1
    assert engine2.get_dialog(root.root_id).latest.run_state.kind == "blocked"
