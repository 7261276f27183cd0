"""Cold start on a workspace full of dialogs at rest: nothing at rest is loaded, nothing is rewritten.

Bugs pinned here: every start read ``latest.yaml`` of every dialog, loaded (with transcripts) every tree
that waits for a person or a teammate, and rewrote their ``q4h.yaml``/``subdlg.yaml`` although nothing had
changed — so 10,000 dialogs took seconds to start and ~150 MiB of memory, and the rewrites made every
tree look touched again at the next start. Now the dialog index tells which trees may have been
mid-flight; a tree the daemon left at rest whose files are unchanged is settled and not even loaded.
"""

from __future__ import annotations

from pathlib import Path

from helpers import sayings

from dominds.store import index_refresh

RESPONSES = [
    {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
    {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
    {"agent": "coder", "message": "postgres", "response": "Built on postgres."},
    {"agent": "lead", "contains": "Built on postgres", "response": "Great."},
]


def _mtimes(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and ".dominds" not in p.parts}


async def test_a_tree_waiting_for_a_person_is_neither_loaded_nor_rewritten_at_start(make_engine, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    engine = await make_engine(RESPONSES, root=ws)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    await engine.close()

    second = await make_engine(RESPONSES, root=ws)  # recovers the tree once and notes it settled
    assert second.roots == {}, "a tree at rest is unloaded after recovery"
    await second.close()
    before = _mtimes(ws / ".dialogs")
    reads: list[str] = []
    real = index_refresh.read_dialog
    monkeypatch.setattr(index_refresh, "read_dialog", lambda d, *args: reads.append(d) or real(d, *args))

    third = await make_engine(RESPONSES, root=ws)
    assert third.roots == {}, "a settled tree is not loaded at all"
    assert reads == [], "nothing changed on disk: no dialog is read again"
    assert _mtimes(ws / ".dialogs") == before, "nothing at rest is rewritten"
    assert [q["id"] for q in third.q4h_state()] == [question["id"]], "its question is still pending"
    third.answer_question(question["id"], "postgres")
    await third.wait_idle()
    assert sayings(third.get_dialog(root.root_id))[-1] == "Great."


async def test_a_settled_tree_changed_on_disk_is_recovered_again(make_engine, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A hand edit, another writer, or a crash after the tree was settled: the files win."""
    ws = tmp_path / "ws"
    engine = await make_engine(RESPONSES, root=ws)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "delegate")
    await engine.wait_idle()
    sub_id = next(iter(engine.store.subdialog_ids("run", root.root_id)))
    await engine.close()
    await (await make_engine(RESPONSES, root=ws)).close()  # settles the tree
    # the person answered offline (what `dominds answer` writes without a daemon): the question is gone
    # from the index file and the answer is queued; only a recovery that looks again drives it
    files = engine.store.files("run", root.root_id, sub_id)
    latest = files.read_latest()
    assert latest is not None
    question = files.read_q4h().questions[0]
    from dominds.ids import now_iso
    from dominds.store.records import QueuedPrompt

    latest.queued_prompts.append(
        QueuedPrompt(msg_id="offline-1", content="postgres", origin="q4h_answer", queued_at=now_iso(), question_id=question.id)
    )
    latest.needs_drive = True
    files.write_latest(latest)
    files.q4h_yaml.unlink()
    again = await make_engine(RESPONSES, root=ws)
    await again.wait_idle()
    assert sayings(again.get_dialog(root.root_id))[-1] == "Great."
