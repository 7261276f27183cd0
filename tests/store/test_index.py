"""The dialog index (store/index.py) is a cache: rebuilt from the files at any time, checked against them on
every refresh (hand edits in place or by rename, other writers, a crash between a file and the index),
and never the only copy of anything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from fuzzing import examples
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store.atomic import set_fsync
from dominds.store.course_records import CourseStartRecord, GenFinishRecord, Usage
from dominds.store.dialog_facts import read_dialog
from dominds.store.dialog_store import DialogStore
from dominds.store.index import DialogIndex
from dominds.store.index_entries import Entry
from dominds.store.records import CallSiteRef, DialogMeta, HumanQuestion, LatestState, Q4hFile, RunState


def _tree(store: DialogStore, subs: int = 2) -> tuple[str, list[str]]:
    root_id = new_dialog_id()
    sub_ids = [new_dialog_id() for _ in range(subs)]
    for self_id in (root_id, *sub_ids):
        files = store.files("run", root_id, self_id)
        files.write_meta(
            DialogMeta(
                id=self_id, root_id=root_id, agent_id="a", task_doc_path="t.tsk", created_at=now_iso(),
                supdialog_id=None if self_id == root_id else root_id,
            )
        )
        files.write_latest(LatestState(last_modified=now_iso()))
        files.append(1, CourseStartRecord(ts=now_iso(), course=1))
    return root_id, sub_ids


def _question(question_id: str) -> HumanQuestion:
    return HumanQuestion(
        id=question_id, tellask_head="@human which?", body_content="", asked_at=now_iso(), call_id="c1",
        call_site_ref=CallSiteRef(course=1, message_index=1),
    )


def _truth(rtws: Rtws) -> dict[tuple[str, str, str], dict[str, object]]:
    """Every dialog's facts read straight from the files (no index)."""
    return {(e.status, e.root_id, e.self_id): e.facts for e in DialogIndex(rtws, persistent=False).entries()}


def _indexed(index: DialogIndex) -> dict[tuple[str, str, str], dict[str, object]]:
    return {(e.status, e.root_id, e.self_id): e.facts for e in index.entries()}


@pytest.fixture
def store(tmp_rtws: Rtws) -> DialogStore:
    set_fsync(False)
    yield DialogStore(tmp_rtws)
    set_fsync(True)


def test_a_hand_edit_in_place_is_seen_even_with_the_same_size_and_mtime_tick(store: DialogStore) -> None:
    rtws = store.rtws
    root_id, _ = _tree(store)
    index = DialogIndex(rtws)
    assert _indexed(index) == _truth(rtws)
    latest = store.files("run", root_id).latest_yaml
    before = os.stat(latest)
    text = latest.read_text()
    edited = text.replace('kind: "idle"', 'kind: "dead"')
    assert len(edited) == len(text)
    with open(latest, "r+", encoding="utf-8") as handle:  # in place: same inode, same size
        handle.write(edited)
    os.utime(latest, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime (within one clock tick)
    facts = {e.self_id: e.facts for e in index.entries()}
    assert facts[root_id]["runState"] == {"kind": "dead"}, "a file changed just before it was indexed is read again"


def test_a_tree_just_written_is_settled_at_once_and_an_edit_in_the_same_tick_unsettles_it(
    store: DialogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug (issue 21): ``settle`` refused a tree whose files had changed within the racy window (always
    the case right after recovery), so the next start recovered it again. The note now holds the digest
    of the bytes too: taken at once, and never fooled by an edit keeping inode, size and mtime."""
    from dominds.store import index as index_module

    rtws = store.rtws
    root_id, _ = _tree(store)
    assert DialogIndex(rtws).settle("run", root_id), "files written a moment ago can be settled"
    [tree] = DialogIndex(rtws).trees(root=("run", root_id))  # a new connection, as the next start
    assert tree.settled

    monkeypatch.setattr(index_module, "RACY_SECONDS", 0)  # the window has passed: bytes checked once more
    [tree] = DialogIndex(rtws).trees(root=("run", root_id))
    assert tree.settled, "a racy dialog whose bytes did not change stays settled when it calms down"
    with contextlib.closing(sqlite3.connect(DialogIndex(rtws).path)) as db:
        assert {racy for (racy,) in db.execute("SELECT racy FROM dialogs")} == {0}, "old enough: the signature alone suffices"
    monkeypatch.undo()

    root_id, _ = _tree(store)
    assert DialogIndex(rtws).settle("run", root_id)
    latest = store.files("run", root_id).latest_yaml
    before = os.stat(latest)
    text = latest.read_text()
    edited = text.replace('kind: "idle"', 'kind: "dead"')
    with open(latest, "r+", encoding="utf-8") as handle:  # same inode, size and mtime: only the bytes tell
        handle.write(edited)
    os.utime(latest, ns=(before.st_atime_ns, before.st_mtime_ns))
    [tree] = DialogIndex(rtws).trees(root=("run", root_id))
    assert not tree.settled, "the note was taken of other bytes"
    assert tree.root.facts["runState"] == {"kind": "dead"}


def test_the_index_is_rebuilt_when_deleted_or_corrupt(store: DialogStore) -> None:
    rtws = store.rtws
    for _ in range(3):
        _tree(store)
    index = DialogIndex(rtws)
    first = _indexed(index)
    index.close()
    index.path.write_bytes(b"this is not an SQLite database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index.path}{suffix}").unlink(missing_ok=True)
    assert _indexed(DialogIndex(rtws)) == first
    shutil.rmtree(index.path.parent)
    assert _indexed(DialogIndex(rtws)) == first == _truth(rtws)


def test_a_crash_between_a_file_and_the_index_is_seen(store: DialogStore) -> None:
    """The index can lag the files (a writer died before refreshing it) or lead them (files restored from a
    backup): either way the signatures differ and the files win."""
    rtws = store.rtws
    root_id, sub_ids = _tree(store)
    index = DialogIndex(rtws)
    _indexed(index)
    saved = store.root_dir("run", root_id).with_name("saved")
    shutil.copytree(store.root_dir("run", root_id), saved)
    files = store.files("run", root_id, sub_ids[0])
    files.write_q4h(Q4hFile(questions=[_question("q1")], updated_at=now_iso()))
    files.append(1, GenFinishRecord(ts=now_iso(), genseq=1, provider="p", model="m", usage=Usage(input_tokens=7, output_tokens=3)))
    assert _indexed(index) == _truth(rtws)
    assert [q["id"] for q in _indexed(index)[("run", root_id, sub_ids[0])]["q4h"]] == ["q1"]
    shutil.rmtree(store.root_dir("run", root_id))
    shutil.copytree(saved, store.root_dir("run", root_id))  # back to before: the index is now ahead
    assert _indexed(index) == _truth(rtws)
    assert "q4h" not in _indexed(index)[("run", root_id, sub_ids[0])]


def test_corrupt_state_files_are_errors_in_the_facts_not_exceptions(store: DialogStore) -> None:
    rtws = store.rtws
    root_id, sub_ids = _tree(store)
    store.files("run", root_id).latest_yaml.write_text("runState: {kind: 12, reason: [}\n")
    store.files("run", root_id, sub_ids[0]).q4h_yaml.write_text("questions: 5\n")
    facts = {e.self_id: e.facts for e in DialogIndex(rtws).entries()}
    assert "latest.yaml" in facts[root_id]["error"] and facts[root_id]["runState"]["kind"] == "error"
    assert "q4h.yaml" in facts[sub_ids[0]]["error"]
    assert "error" not in facts[sub_ids[1]]


def test_the_index_holds_nothing_the_files_do_not(store: DialogStore) -> None:
    """Never the only copy: every fact in the index is what ``read_dialog`` reads from the files."""
    rtws = store.rtws
    for _ in range(4):
        _tree(store, subs=3)
    index = DialogIndex(rtws)
    _indexed(index)
    db = sqlite3.connect(index.path)
    rows = db.execute("SELECT key, facts FROM facts").fetchall()
    assert len(rows) == 16 == db.execute("SELECT count(*) FROM dialogs").fetchone()[0]
    import json

    for key, facts in rows:
        status, root_id, self_id = key.split("/")
        assert json.loads(facts) == read_dialog(str(store.files(status, root_id, self_id).dir)).facts


class IndexAgainstFiles(RuleBasedStateMachine):
    """Any mix of writes, hand edits, moves, deletions and index damage: the index always tells the files' truth."""

    @initialize()
    def setup(self) -> None:
        import tempfile

        self.base = Path(tempfile.mkdtemp(prefix="dominds-index-"))
        self.rtws = Rtws(self.base)
        self.rtws.ensure_layout()
        set_fsync(False)
        self.store = DialogStore(self.rtws)
        self.index = DialogIndex(self.rtws)
        self.trees: list[tuple[str, str, list[str]]] = []

    def teardown(self) -> None:
        self.index.close()
        set_fsync(True)
        shutil.rmtree(self.base, ignore_errors=True)

    @rule(subs=st.integers(0, 3))
    def create_tree(self, subs: int) -> None:
        root_id, sub_ids = _tree(self.store, subs)
        self.trees.append(("run", root_id, sub_ids))

    def _pick(self, data: st.DataObject) -> tuple[str, str, str] | None:
        if not self.trees:
            return None
        status, root_id, sub_ids = data.draw(st.sampled_from(self.trees))
        return status, root_id, data.draw(st.sampled_from([root_id, *sub_ids]))

    @rule(data=st.data(), kind=st.sampled_from(["idle", "blocked", "dead", "interrupted"]))
    def daemon_writes_latest(self, data: st.DataObject, kind: str) -> None:
        picked = self._pick(data)
        if picked:
            files = self.store.files(*picked)
            latest = LatestState(last_modified=now_iso(), run_state=RunState(kind=kind, reason="x") if kind != "idle" else RunState(kind="idle"))  # type: ignore[arg-type]
            files.write_latest(latest)

    @rule(data=st.data(), text=st.sampled_from(["garbage: [", "runState: {kind: idle}\n", "", "currentCourse: 3\n"]))
    def hand_edit_in_place(self, data: st.DataObject, text: str) -> None:
        picked = self._pick(data)
        if picked:
            path = self.store.files(*picked).latest_yaml
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)

    @rule(data=st.data(), tokens=st.integers(0, 1000))
    def a_generation_finishes(self, data: st.DataObject, tokens: int) -> None:
        picked = self._pick(data)
        if picked:
            usage = Usage(input_tokens=tokens, output_tokens=1)
            self.store.files(*picked).append(1, GenFinishRecord(ts=now_iso(), genseq=1, provider="p", model="m", usage=usage))

    @rule(data=st.data())
    def a_question_is_asked_then_maybe_answered(self, data: st.DataObject) -> None:
        picked = self._pick(data)
        if picked:
            files = self.store.files(*picked)
            question = _question(new_dialog_id())
            files.write_q4h(Q4hFile(questions=[question], updated_at=now_iso()))
            if data.draw(st.booleans()):
                files.write_q4h(Q4hFile(questions=[], updated_at=now_iso()))

    @rule(data=st.data(), to=st.sampled_from(["done", "archive", "run"]))
    def move_a_tree(self, data: st.DataObject, to: str) -> None:
        if self.trees:
            index = data.draw(st.integers(0, len(self.trees) - 1))
            status, root_id, subs = self.trees[index]
            if status != to:
                self.store.move_root(root_id, status, to)
                self.trees[index] = (to, root_id, subs)

    @rule(data=st.data())
    def delete_a_tree(self, data: st.DataObject) -> None:
        if self.trees:
            status, root_id, _ = self.trees.pop(data.draw(st.integers(0, len(self.trees) - 1)))
            self.store.delete_root(status, root_id)

    @rule(how=st.sampled_from(["delete", "garbage", "reopen"]))
    def damage_the_index(self, how: str) -> None:
        self.index.close()
        if how == "delete":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.index.path}{suffix}").unlink(missing_ok=True)
        elif how == "garbage":
            for suffix in ("-wal", "-shm"):
                Path(f"{self.index.path}{suffix}").unlink(missing_ok=True)
            self.index.path.write_bytes(os.urandom(512))
        self.index = DialogIndex(self.rtws)

    @invariant()
    def the_index_tells_the_files_truth(self) -> None:
        if hasattr(self, "index"):
            assert _indexed(self.index) == _truth(self.rtws)
            # and keeps no tree whose directory is gone (moved away, deleted)
            db = self.index._connect()  # the connection it refreshed through (an in-memory one if its file was unusable)
            kept = {key for (key,) in db.execute("SELECT key FROM trees")}
            kept_dialogs = {f"{s}/{r}" for s, r in db.execute("SELECT DISTINCT status, root_id FROM dialogs")}
            present = {f"{status}/{root_id}" for status, root_id, _ in self.trees}
            assert kept <= present
            assert kept_dialogs <= present


IndexAgainstFiles.TestCase.settings = settings(max_examples=examples(30), stateful_step_count=15, deadline=None)
test_the_index_always_agrees_with_the_files = IndexAgainstFiles.TestCase


class IndexAgainstFilesTwoTreesPerQuery(IndexAgainstFiles):
    """The same, reading the index two trees per query: trees the index holds between, before and after
    the chunks of a directory are found gone. The refresh once read every tree of a status into one
    dict (8 MB at 100,000 dialogs, the daemon's memory stayed that high); it now reads them a chunk at
    a time, and a tree deleted between two chunks must still be dropped."""

    def __init__(self) -> None:
        import dominds.store.index as index_module

        super().__init__()
        self.saved_per_query = index_module.ROOTS_PER_QUERY
        index_module.ROOTS_PER_QUERY = 2

    def teardown(self) -> None:
        import dominds.store.index as index_module

        index_module.ROOTS_PER_QUERY = self.saved_per_query
        super().teardown()


IndexAgainstFilesTwoTreesPerQuery.TestCase.settings = settings(max_examples=examples(30), stateful_step_count=20, deadline=None)
test_the_index_agrees_with_the_files_read_a_few_trees_per_query = IndexAgainstFilesTwoTreesPerQuery.TestCase


def test_entries_of_one_tree(store: DialogStore) -> None:
    rtws = store.rtws
    root_id, sub_ids = _tree(store)
    _tree(store)
    entries: list[Entry] = DialogIndex(rtws).entries(root=("run", root_id))
    assert [e.self_id for e in entries] == [root_id, *sorted(sub_ids)]
