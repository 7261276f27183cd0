"""``GET /api/dialogs?limit=N``: the first N trees of the whole listing, the others counted in ``more``.

The first listing of a big workspace checked every file of every dialog before it sent a byte (a whole
refresh of the dialog index); asked for the N most recent trees, the daemon chooses them with one
``stat`` per root directory (store/index_recent.py, counted in tests/store/test_index_recent.py) and
builds only those."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from server_kit import ServeFactory

from dominds.ids import new_dialog_id
from dominds.rtws import Rtws
from dominds.store import dialog_store, index_refresh
from dominds.store.atomic import set_fsync
from dominds.store.course_records import CourseStartRecord
from dominds.store.dialog_store import DialogStore
from dominds.store.records import DialogMeta, LatestState

TREES = 40
LIMIT = 5


async def test_limit_lists_the_most_recent_trees_and_counts_the_others(serve: ServeFactory) -> None:
    served = await serve()
    for _ in range(3):
        status, _created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        assert status == 201
    status, whole = await served.get("/api/dialogs")
    assert status == 200 and "more" not in whole
    order = [tree["rootId"] for tree in whole["dialogs"]]
    status, limited = await served.get("/api/dialogs?limit=2")
    assert status == 200 and [tree["rootId"] for tree in limited["dialogs"]] == order[:2] and limited["more"] == 1
    assert limited["dialogs"] == whole["dialogs"][:2], "the same trees, built the same way"

    oldest = order[-1]
    status, _ = await served.post(f"/api/dialogs/{oldest}/title", {"title": "active again"})
    assert status == 200
    status, latest = await served.get("/api/dialogs?limit=1")
    assert [tree["rootId"] for tree in latest["dialogs"]] == [oldest] and latest["more"] == 2
    assert latest["dialogs"][0]["title"] == "active again"

    for bad in ("0", "-1", "two", "²"):
        status, refused = await served.get(f"/api/dialogs?limit={bad}")
        assert status == 400 and "1 or more" in refused["error"], bad


async def test_a_first_listing_without_an_index_reads_only_the_trees_it_shows(
    serve: ServeFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no dialog index (a first start, an index deleted or from an older version), the panel's
    first ``?status=done&limit=N`` read every dialog of done/ (more than 512 unknown trees: a whole
    refresh) before it answered: minutes at 100,000 dialogs. A root's ``lastModified`` is at most its
    directory's mtime, so it now reads the N trees it shows (store/index_recent.py), counted here.
    (Recovery at start reads run/ only: done/ is first read by this listing.)"""
    rtws = Rtws(tmp_path / "ws")
    rtws.ensure_layout()
    set_fsync(False)
    store = DialogStore(rtws)
    now = time.time()
    made = []
    for n in range(TREES):  # the last made is the most recently active
        when = now - 3600 * (TREES - n)
        stamp = datetime.fromtimestamp(when).astimezone().isoformat(timespec="milliseconds")
        root_id = new_dialog_id()
        for self_id in (root_id, new_dialog_id()):
            files = store.files("done", root_id, self_id)
            sup = None if self_id == root_id else root_id
            files.write_meta(DialogMeta(id=self_id, root_id=root_id, agent_id="lead", task_doc_path="tasks/t.tsk", created_at=stamp, supdialog_id=sup))
            with mock.patch.object(dialog_store, "now_iso", return_value=stamp):  # as if written then
                files.write_latest(LatestState(last_modified=stamp))
            files.append(1, CourseStartRecord(ts=stamp, course=1))
        os.utime(store.root_dir("done", root_id), (when, when))
        made.append(root_id)
    set_fsync(True)
    served = await serve()
    reads: list[str] = []
    real_read = index_refresh.read_dialog

    def counted(directory: str, *args: Any) -> Any:
        reads.append(directory)
        return real_read(directory, *args)

    monkeypatch.setattr(index_refresh, "read_dialog", counted)
    status, page = await served.get(f"/api/dialogs?status=done&limit={LIMIT}")
    assert status == 200 and [tree["rootId"] for tree in page["dialogs"]] == made[::-1][:LIMIT] and page["more"] == TREES - LIMIT
    assert len(reads) == LIMIT * 2, "the trees shown (a root and a subdialog each), no other"
    status, whole = await served.get("/api/dialogs?status=done")
    assert [tree["rootId"] for tree in whole["dialogs"]][:LIMIT] == made[::-1][:LIMIT], "the whole listing agrees"
    assert len(reads) == TREES * 2, "the whole listing read the others, once each"
