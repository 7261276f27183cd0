"""Dialog layout, typed file access, listing and moving root trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store import atomic, dialog_store
from dominds.store.course_records import CourseStartRecord
from dominds.store.dialog_store import DialogStore
from dominds.store.errors import DialogNotFoundError
from dominds.store.queue_log import QueuedLine
from dominds.store.records import (
    DialogMeta,
    LatestState,
    PendingSubdialog,
    Q4hFile,
    QueuedPrompt,
    RegistryEntry,
    SubdlgFile,
)


def _make_tree(store: DialogStore) -> tuple[str, str, str]:
    root_id, sub_id, nested_id = new_dialog_id(), new_dialog_id(), new_dialog_id()
    for self_id, sup in ((root_id, None), (sub_id, root_id), (nested_id, sub_id)):
        files = store.files("run", root_id, self_id)
        files.write_meta(
            DialogMeta(
                id=self_id, root_id=root_id, agent_id="a", task_doc_path="t.tsk", created_at=now_iso(), supdialog_id=sup
            )
        )
        files.write_latest(LatestState(last_modified=now_iso()))
    return root_id, sub_id, nested_id


def test_subdialogs_are_stored_flat_under_root(tmp_rtws: Rtws) -> None:
    store = DialogStore(tmp_rtws)
    root_id, sub_id, nested_id = _make_tree(store)
    assert (tmp_rtws.run_dir / root_id / "subdialogs" / nested_id / "dialog.yaml").exists()
    assert store.subdialog_ids("run", root_id) == sorted([sub_id, nested_id])


def test_ids_are_path_safe_and_time_sortable() -> None:
    ids = [new_dialog_id() for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all("/" not in i for i in ids)


def test_move_root_tree_between_statuses(tmp_rtws: Rtws) -> None:
    store = DialogStore(tmp_rtws)
    root_id, _, nested_id = _make_tree(store)
    store.files("run", root_id).write_registry(
        {"a!s": RegistryEntry(subdialog_id=nested_id, agent_id="a", tellask_session="s", created_at=now_iso())}
    )
    store.move_root(root_id, "run", "done")
    assert store.locate_root(root_id) == "done"
    assert store.files("done", root_id).read_registry()["a!s"].subdialog_id == nested_id
    store.move_root(root_id, "done", "archive")
    store.move_root(root_id, "archive", "run")
    assert store.locate_root(root_id) == "run"


def test_unknown_and_hostile_ids_are_not_found(tmp_rtws: Rtws) -> None:
    store = DialogStore(tmp_rtws)
    with pytest.raises(DialogNotFoundError):
        store.locate_root("nope")
    for bad in ("../x", "..", "a/b", ""):
        with pytest.raises(DialogNotFoundError):
            store.files("run", bad)


def test_index_files_are_deleted_when_empty(tmp_rtws: Rtws) -> None:
    store = DialogStore(tmp_rtws)
    root_id, _, _ = _make_tree(store)
    files = store.files("run", root_id)
    files.write_subdlg(
        SubdlgFile(
            pending=[
                PendingSubdialog(
                    subdialog_id="x", agent_id="a", call_type="C", tellask_head="h", call_id="c", created_at=now_iso()
                )
            ],
            updated_at=now_iso(),
        )
    )
    assert files.subdlg_yaml.exists()
    files.write_subdlg(SubdlgFile(updated_at=now_iso()))
    assert not files.subdlg_yaml.exists()
    files.write_q4h(Q4hFile(updated_at=now_iso()))
    assert not files.q4h_yaml.exists()


def test_registry_is_a_plain_map_with_version_header(tmp_rtws: Rtws) -> None:
    store = DialogStore(tmp_rtws)
    root_id, sub_id, _ = _make_tree(store)
    files = store.files("run", root_id)
    files.write_registry(
        {
            "coder!review": RegistryEntry(
                subdialog_id=sub_id, agent_id="coder", tellask_session="review", created_at=now_iso()
            )
        }
    )
    text = files.registry_yaml.read_text()
    assert text.startswith("# dominds registry.yaml format v1")
    assert "coder!review:" in text and "subdialogId:" in text and "lastAccessed" not in text



def test_a_subdialog_is_located_by_its_id_alone(tmp_rtws: Rtws) -> None:
    store = DialogStore(tmp_rtws)
    root_id, sub_id, nested_id = _make_tree(store)
    store.move_root(root_id, "run", "done")
    assert store.locate_dialog(nested_id) == ("done", root_id)
    assert store.locate_dialog(root_id) == ("done", root_id)



def test_moving_a_tree_is_a_crash_point_and_durable_when_it_returns(
    tmp_rtws: Rtws, monkeypatch: pytest.MonkeyPatch, synced: list[str]
) -> None:
    """The rename is a crash point (the crash sweeps kill right before it, the tree still where it was), and
    both status directories are fsynced before ``move_root`` returns: after a power cut the tree is in the
    one it was moved to. (A mutation sample removed either with every test green.)"""
    store = DialogStore(tmp_rtws)
    root_id, _, _ = _make_tree(store)
    src, dst = tmp_rtws.status_dir("run") / root_id, tmp_rtws.status_dir("done") / root_id
    steps: list[tuple[str, Path, bool]] = []
    monkeypatch.setattr(dialog_store, "durable_step", lambda what, path: steps.append((what, path, src.exists())))
    synced.clear()  # only move_root's own fsyncs count
    store.move_root(root_id, "run", "done")
    assert steps == [("rename", dst, True)]
    assert str(src.parent) in synced and str(dst.parent) in synced


def test_the_queue_on_disk_is_latests_prompts_then_the_logs(tmp_rtws: Rtws) -> None:
    """``read_queue`` (what ``dominds status`` and the tests read): the prompts ``latest.yaml`` lists (queued
    with the state that goes with them) come first, then the log's; with no ``latest.yaml``, the log's."""
    store = DialogStore(tmp_rtws)
    root_id, sub_id, _ = _make_tree(store)

    def prompt(msg_id: str) -> QueuedPrompt:
        return QueuedPrompt(msg_id=msg_id, content=msg_id, queued_at=now_iso())

    files = store.files("run", root_id)
    files.write_latest(LatestState(last_modified=now_iso(), queued_prompts=[prompt("listed")]))
    files.queue_log.append([QueuedLine(prompt=prompt("logged"))])
    assert [p.msg_id for p in files.read_queue()] == ["listed", "logged"]
    sub = store.files("run", root_id, sub_id)
    sub.latest_yaml.unlink()
    sub.queue_log.append([QueuedLine(prompt=prompt("logged"))])
    assert [p.msg_id for p in sub.read_queue()] == ["logged"]


def test_a_new_dialog_is_written_as_new_files_and_one_rename(tmp_rtws: Rtws, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file of a new dialog is written once, as a new file in the staging directory, and the directory's
    rename is the one atomic step (no temp file and rename per file): a mutation sample wrote ``latest.yaml``
    through its spare there, one more rename and directory fsync per new dialog, with every test green."""
    steps: list[tuple[str, str]] = []
    real_step = atomic.durable_step

    def step(what: str, path: Path | None) -> None:
        steps.append((what, path.name if path else ""))
        real_step(what, path)

    monkeypatch.setattr(atomic, "durable_step", step)
    monkeypatch.setattr(dialog_store, "durable_step", step)
    store = DialogStore(tmp_rtws)
    root_id = new_dialog_id()
    files = store.files("run", root_id)
    meta = DialogMeta(id=root_id, root_id=root_id, agent_id="a", task_doc_path="t.tsk", created_at=now_iso())
    dialog_store.create_dialog_dir(files, meta, LatestState(last_modified=now_iso()), CourseStartRecord(ts=now_iso(), course=1))
    assert steps == [("create", "dialog.yaml"), ("create", "latest.yaml"), ("create", "course-001.jsonl"), ("rename", root_id)]
    assert sorted(os.listdir(files.dir)) == ["course-001.jsonl", "dialog.yaml", "latest.yaml"]


def test_a_creation_leftover_that_cannot_be_removed_never_stops_a_start(tmp_rtws: Rtws, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recovery removes the staging directories of creations a crash interrupted; one it may not remove (a
    file owned by another user: the suite runs as root, so its removal is refused here by a stub) is left,
    the others go, and the start goes on (a mutation sample made the removal strict, every test green)."""
    run = tmp_rtws.status_dir("run")
    for name in ("a", "b"):
        (run / f"{dialog_store.CREATING_PREFIX}{name}-1").mkdir()
        (run / f"{dialog_store.CREATING_PREFIX}{name}-1" / "dialog.yaml").write_text("id: x\n")
    real_unlink = os.unlink

    def unlink(path: str | Path, *, dir_fd: int | None = None) -> None:
        if dir_fd is not None and "-a-1" in os.readlink(f"/proc/self/fd/{dir_fd}"):
            raise PermissionError(1, "Operation not permitted")
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink)
    assert dialog_store.remove_creation_leftovers(run) == 2
    assert sorted(os.listdir(run)) == [f"{dialog_store.CREATING_PREFIX}a-1"]
