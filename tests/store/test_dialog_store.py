"""Dialog layout, typed file access, listing and moving root trees."""

from __future__ import annotations

import pytest

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store.dialog_store import DialogStore
from dominds.store.errors import DialogNotFoundError
from dominds.store.records import (
    DialogMeta,
    LatestState,
    PendingSubdialog,
    Q4hFile,
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
