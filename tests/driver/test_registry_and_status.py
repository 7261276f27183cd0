"""TYPE B registry recovery, `locked`, duplicate session calls and `latest.yaml` status (issue 14, items 7-9)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml
from helpers import records, sayings

from dominds.store.course_records import HumanTextRecord, SubdialogCreatedRecord, TeammateResponseRecord

SESSION = [
    {"agent": "lead", "message": "books", "response": "!?@coder !tellaskSession fin do the books\n"},
    {"agent": "coder", "contains": "do the books", "response": "Books done."},
    {"agent": "lead", "contains": "provided response", "response": "Noted."},
]


async def _first_session(make_engine, tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = await make_engine(SESSION, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)
    await engine.close()
    return root.root_id, sub_id


async def test_deleted_registry_is_rebuilt_from_the_subdialogs(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: with registry.yaml deleted, the next `!?@coder !tellaskSession fin` created a second subdialog
    for `coder!fin`. The seed: the registry is rebuilt from the subdialogs' dialog.yaml on load."""
    root_id, sub_id = await _first_session(make_engine, tmp_path)
    registry = tmp_path / "ws" / ".dialogs" / "run" / root_id / "registry.yaml"
    registry.unlink()
    engine = await make_engine(SESSION, root=tmp_path / "ws")
    root = engine.get_dialog(root_id)
    assert root.notices and "rebuilt" in root.notices[0]
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    assert engine.store.subdialog_ids("run", root_id) == [sub_id], "the session was resumed, not duplicated"
    assert list(yaml.safe_load(registry.read_text())) == ["coder!fin"]


async def test_corrupt_registry_is_rebuilt_not_refused(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: a corrupt registry.yaml made the whole root refuse messages (409). Now it is rebuilt and reported."""
    root_id, sub_id = await _first_session(make_engine, tmp_path)
    registry = tmp_path / "ws" / ".dialogs" / "run" / root_id / "registry.yaml"
    registry.write_text("{{{ not yaml ::: [")
    engine = await make_engine(SESSION, root=tmp_path / "ws")
    root = engine.get_dialog(root_id)
    assert root.load_error is None and any("unreadable" in n for n in root.notices)
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    assert engine.store.subdialog_ids("run", root_id) == [sub_id]
    assert sayings(root)[-1] == "Noted."


async def test_registry_entry_is_locked_while_its_subdialog_is_driven(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: `locked` was never true. The seed: true while the registered subdialog is being driven."""
    slow = [{**SESSION[1], "delay_ms": 20, "chunk_chars": 2}, SESSION[0], SESSION[2]]
    engine = await make_engine(slow, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "books")
    registry = root.files.registry_yaml
    seen_locked = False
    for _ in range(400):
        if registry.exists() and (yaml.safe_load(registry.read_text()) or {}).get("coder!fin", {}).get("locked"):
            seen_locked = True
            break
        await asyncio.sleep(0.01)
    await engine.wait_idle()
    assert seen_locked
    assert yaml.safe_load(registry.read_text())["coder!fin"]["locked"] is False


async def test_identical_session_calls_in_one_message_each_get_the_response(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: two identical TYPE B calls in one message shared one subdialog (right) but the first call site
    never got a response or a note."""
    call = "!?@coder !tellaskSession fin do the books\n"
    engine = await make_engine(
        [
            {"agent": "lead", "message": "twice", "response": f"{call}\n{call}"},
            {"agent": "coder", "contains": "do the books", "response": "Books done."},
            {"agent": "lead", "contains": "provided response", "response": "Noted."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "twice")
    await engine.wait_idle()
    calls = {r.call_id for r in records(root) if isinstance(r, SubdialogCreatedRecord)}
    answered = {r.call_id for r in records(root) if isinstance(r, TeammateResponseRecord)}
    assert len(calls) == 2 and answered == calls
    assert len(engine.store.subdialog_ids("run", root.root_id)) == 1
    assert not root.pending and sayings(root)[-1] == "Noted."


async def test_latest_yaml_status_follows_the_directory(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug: latest.yaml had no `status` field (seed: status, needsDrive, generating)."""
    engine = await make_engine(SESSION, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    [sub_id] = engine.store.subdialog_ids("run", root.root_id)

    def statuses(where: str) -> set[str]:
        base = tmp_path / "ws" / ".dialogs" / where / root.root_id
        files = [base / "latest.yaml", base / "subdialogs" / sub_id / "latest.yaml"]
        return {yaml.safe_load(f.read_text())["status"] for f in files}

    assert statuses("run") == {"running"}
    engine.move_root(root.root_id, "done")
    assert statuses("done") == {"completed"}
    engine.move_root(root.root_id, "archive")
    assert statuses("archive") == {"archived"}
    engine.move_root(root.root_id, "run")
    assert statuses("run") == {"running"}
    latest = yaml.safe_load((tmp_path / "ws" / ".dialogs" / "run" / root.root_id / "latest.yaml").read_text())
    assert {"needsDrive", "generating", "status"} <= set(latest)


async def test_a_delegation_cycle_is_refused_with_a_note(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Bug: a delegation cycle (A waits on B waits on A, through a session re-tellask) was never detected:
    both dialogs waited for each other forever. The closing call gets a note instead."""
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "!?@coder !tellaskSession a build it\n"},
            {"agent": "coder", "contains": "build it", "response": "!?@researcher !tellaskSession b check it\n"},
            {"agent": "researcher", "contains": "check it", "response": "!?@coder !tellaskSession a what do you need?\n"},
            {"agent": "researcher", "contains": "deadlock", "response": "Checked without asking back."},
            {"agent": "coder", "contains": "Checked without", "response": "Built."},
            {"agent": "lead", "contains": "Built.", "response": "Done."},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    assert sayings(root)[-1] == "Done."
    for self_id in engine.store.subdialog_ids("run", root.root_id):
        assert not engine.get_dialog(root.root_id, self_id).pending


async def test_a_registry_naming_a_missing_subdialog_does_not_fork_the_session(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (issue 34): with registry.yaml naming a subdialog that no longer exists, the next
    `!?@coder !tellaskSession fin` created a second coder subdialog and orphaned the session's history: the
    registry was rebuilt when missing or malformed, not when stale. The session's own files name it."""
    root_id, sub_id = await _first_session(make_engine, tmp_path)
    registry = tmp_path / "ws" / ".dialogs" / "run" / root_id / "registry.yaml"
    registry.write_text(registry.read_text().replace(sub_id, "0zzzzzzzz-zzzz"))
    engine = await make_engine(SESSION, root=tmp_path / "ws")
    root = engine.get_dialog(root_id)
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    assert engine.store.subdialog_ids("run", root_id) == [sub_id], "the session was resumed, not forked"
    assert yaml.safe_load(registry.read_text())["coder!fin"]["subdialogId"] == sub_id
    assert any("does not exist" in n for n in root.notices)
    session = engine.get_dialog(root_id, sub_id)
    assert sayings(session) == ["Books done.", "Books done."], "the second call went to the same session"
    assert sayings(root)[-1] == "Noted."


async def test_a_registry_naming_another_sessions_subdialog_does_not_send_the_call_there(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bug (a sibling of issue 34, item 4): a stale registry entry that names a subdialog which exists but holds
    another session (another member's, after a hand edit or a restored backup) was used as it stood: the call
    for `coder!fin` went to the researcher's session, which answered it as the coder. The registry entry is
    taken only for the member and session it is keyed by; otherwise the session's own files say which it is."""
    responses = [
        *SESSION,
        {"agent": "lead", "message": "notes", "response": "!?@researcher !tellaskSession notes take notes\n"},
        {"agent": "researcher", "contains": "take notes", "response": "Notes taken."},
    ]
    engine = await make_engine(responses, root=tmp_path / "ws")
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    engine.submit_user_message(root, "notes")
    await engine.wait_idle()
    registry_file = root.files.dir / "registry.yaml"
    registry = yaml.safe_load(registry_file.read_text())
    coder_id, researcher_id = registry["coder!fin"]["subdialogId"], registry["researcher!notes"]["subdialogId"]
    await engine.close()
    registry["coder!fin"]["subdialogId"] = researcher_id
    registry_file.write_text(yaml.safe_dump(registry, sort_keys=False))

    engine = await make_engine(responses, root=tmp_path / "ws")
    root = engine.get_dialog(root.root_id)
    engine.submit_user_message(root, "books")
    await engine.wait_idle()
    assert sorted(engine.store.subdialog_ids("run", root.root_id)) == sorted([coder_id, researcher_id]), "no fork"
    researcher = engine.get_dialog(root.root_id, researcher_id)
    asked = [r.content for r in researcher.files.read_course(1) if isinstance(r, HumanTextRecord)]
    assert not [a for a in asked if "do the books" in a], f"the researcher was asked: {asked}"
    assert sayings(researcher) == ["Notes taken."]
    assert sayings(engine.get_dialog(root.root_id, coder_id)) == ["Books done.", "Books done."]
    assert yaml.safe_load(registry_file.read_text())["coder!fin"]["subdialogId"] == coder_id
    assert any("which holds `researcher!notes`" in n for n in root.notices), root.notices
    assert sayings(root)[-1] == "Noted."
