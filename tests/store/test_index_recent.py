"""The most recent trees without checking every dialog's files (``DialogIndex.recent_trees``, ``status --limit``),
and a changed dialog read again without its history (``dialog_facts.read_dialog(kept=...)``).

The cost this pins: ``dominds status --json`` at 10,000 dialogs stat-ed every file of every dialog
(4–5 ``stat`` calls each) to print all of them, 0.7–1.3 s (9–10 s and 47 MB of JSON at 100,000). Asked
for the N most recent trees, the index now stats one directory per tree to find what changed and
refreshes only the trees it shows: counted here in ``stat`` calls and dialogs read, never in seconds.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from dominds.ids import new_dialog_id, now_iso
from dominds.rtws import Rtws
from dominds.store import dialog_facts, dialog_store, index_refresh
from dominds.store.atomic import set_fsync
from dominds.store.course_records import CourseStartRecord, GenFinishRecord, Usage
from dominds.store.dialog_store import DialogStore
from dominds.store.index import DialogIndex
from dominds.store.records import DialogMeta, LatestState

TREES = 60
SUBS = 2
LIMIT = 5


@pytest.fixture
def store(tmp_rtws: Rtws) -> Iterator[DialogStore]:
    set_fsync(False)
    yield DialogStore(tmp_rtws)
    set_fsync(True)


def _tree(store: DialogStore, when: float | None = None) -> str:
    """A root and its ``SUBS`` subdialogs; ``when``: their ``lastModified`` and the root directory's
    mtime (as a tree last active then has them), else now."""
    root_id = new_dialog_id()
    stamp = now_iso() if when is None else datetime.fromtimestamp(when).astimezone().isoformat(timespec="milliseconds")
    for self_id in (root_id, *(new_dialog_id() for _ in range(SUBS))):
        files = store.files("run", root_id, self_id)
        files.write_meta(
            DialogMeta(
                id=self_id, root_id=root_id, agent_id="a", task_doc_path="t.tsk", created_at=now_iso(),
                supdialog_id=None if self_id == root_id else root_id,
            )
        )
        with mock.patch.object(dialog_store, "now_iso", return_value=stamp):  # as if written then
            files.write_latest(LatestState(last_modified=stamp))
        files.append(1, CourseStartRecord(ts=now_iso(), course=1))
    if when is not None:
        os.utime(store.root_dir("run", root_id), (when, when))
    return root_id


def _age_everything(root: Path, seconds: float = 3600) -> None:
    """Every file and directory an hour old: none is *racy* (written within the clock's granularity)."""
    then = time.time() - seconds
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.utime(os.path.join(folder, name), (then, then))
        os.utime(folder, (then, then))


class _Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stats = 0
        self.reads = 0
        real_stat, real_read = os.stat, index_refresh.read_dialog

        def stat(*args: Any, **kwargs: Any) -> os.stat_result:
            self.stats += 1
            return real_stat(*args, **kwargs)

        def read(directory: str, *args: Any) -> Any:
            self.reads += 1
            return real_read(directory, *args)

        monkeypatch.setattr(os, "stat", stat)
        monkeypatch.setattr(index_refresh, "read_dialog", read)

    def reset(self) -> None:
        self.stats = self.reads = 0


def _full_order(rtws: Rtws) -> list[str]:
    """The trees in listing order, from every file (status run/, most recent root first, a tie: the
    newer id first)."""
    trees = DialogIndex(rtws, persistent=False).trees(("run",))
    return [t.root.root_id for t in sorted(trees, key=lambda t: (t.root.last_modified, t.root.root_id), reverse=True)]


def test_the_most_recent_trees_cost_a_stat_per_tree_and_read_only_what_changed(
    store: DialogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rtws = store.rtws
    roots = [_tree(store) for _ in range(TREES)]
    _age_everything(rtws.dialogs_dir)
    index = DialogIndex(rtws)
    counts = _Counts(monkeypatch)
    index.trees(("run",))  # the index as a listing left it
    counts.reset()
    index.trees(("run",))
    full_stats = counts.stats  # what a whole refresh costs when nothing changed

    old = roots[3]
    files = store.files("run", old, old)
    files.write_latest(files.read_latest())  # the oldest tree is active again: its root's state rewritten
    newcomer = _tree(store)  # and a tree the index has never seen
    gone = roots[7]
    shutil.rmtree(rtws.run_dir / gone)

    counts.reset()
    chosen, total = index.recent_trees(("run",), LIMIT)
    stats, reads = counts.stats, counts.reads
    assert total == TREES, "every tree is counted (60 - 1 removed + 1 new)"
    assert [t.root.root_id for t in chosen] == _full_order(rtws)[:LIMIT], "the same first trees as a whole listing"
    assert {t.root.root_id for t in chosen[:2]} == {old, newcomer}
    assert all(len(t.entries) == 1 + SUBS and t.root.facts for t in chosen), "the trees shown are whole, with their facts"
    assert reads == 1 + (1 + SUBS), "read: the changed root and the new tree's dialogs, nothing else"
    per_shown_tree = full_stats / TREES
    assert stats <= TREES + 2 * LIMIT * per_shown_tree, (stats, full_stats)
    assert stats < full_stats / 2, (stats, full_stats)


def test_a_first_run_without_an_index_reads_every_dialog_once(store: DialogStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(12):
        _tree(store)
    counts = _Counts(monkeypatch)
    chosen, total = DialogIndex(store.rtws).recent_trees(("run",), 3)
    reads = counts.reads
    assert total == 12 and len(chosen) == 3
    assert [t.root.root_id for t in chosen] == _full_order(store.rtws)[:3]
    assert reads == 12 * (1 + SUBS), "each dialog read once (none twice for being both new and shown)"


def test_a_first_listing_without_an_index_reads_only_the_trees_it_may_show(
    store: DialogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cost this pins: with no index (a first start, an index deleted or from an older version) the
    N most recent trees were chosen by reading every dialog (more than 512 unknown roots: a whole
    refresh), 229 s before the first listing of 100,000 dialogs. A root's ``lastModified`` is at most its
    directory's mtime, so the unknown trees are read newest directory first, and only while one may
    still come before the N-th found."""
    now = time.time()
    roots = [_tree(store, now - 3600 * (TREES - n)) for n in range(TREES)]  # the last made is the newest
    counts = _Counts(monkeypatch)
    chosen, total = DialogIndex(store.rtws).recent_trees(("run",), LIMIT)
    reads = counts.reads
    assert total == TREES and [t.root.root_id for t in chosen] == roots[::-1][:LIMIT] == _full_order(store.rtws)[:LIMIT]
    assert reads == LIMIT * (1 + SUBS), "the trees shown, and no other"

    # directory times that bound nothing (a workspace copied without its times: every directory newer
    # than every lastModified): every tree is read, and the order is still that of lastModified
    copied = time.time() + 60
    for root_id in roots:
        os.utime(store.root_dir("run", root_id), (copied, copied))
    counts.reset()
    chosen, total = DialogIndex(store.rtws).recent_trees(("run",), LIMIT)
    assert [t.root.root_id for t in chosen] == roots[::-1][:LIMIT]
    assert counts.reads == (TREES - LIMIT) * (1 + SUBS) + LIMIT, "the others read now; of the trees shown, their touched root"


def test_trees_last_active_at_the_same_time_are_chosen_as_the_whole_listing_orders_them(
    store: DialogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bug this pins: on a tie in ``lastModified`` (dialogs made in the same millisecond) the N
    most recent trees were chosen older id first, while the panel's listing orders a tie newer id
    first: the tree at the edge of a page was not the one a whole listing shows there."""
    when = time.time() - 3600
    roots = [_tree(store, when) for _ in range(12)]
    index = DialogIndex(store.rtws)
    chosen, _total = index.recent_trees(("run",), 5)
    assert [t.root.root_id for t in chosen] == sorted(roots, reverse=True)[:5] == _full_order(store.rtws)[:5]
    chosen, _total = index.recent_trees(("run",), 5)  # the same from the index, with nothing read
    assert [t.root.root_id for t in chosen] == sorted(roots, reverse=True)[:5]


def _long_dialog(store: DialogStore, courses: int, generations: int) -> str:
    """A root of ``courses`` courses of ``generations`` finished generations each; the last is current."""
    root_id = new_dialog_id()
    files = store.files("run", root_id, root_id)
    files.write_meta(DialogMeta(id=root_id, root_id=root_id, agent_id="a", task_doc_path="t.tsk", created_at=now_iso()))
    for course in range(1, courses + 1):
        files.append(course, CourseStartRecord(ts=now_iso(), course=course))
        for genseq in range(1, generations + 1):
            usage = Usage(input_tokens=course * 100 + genseq, output_tokens=1)
            files.append(course, GenFinishRecord(ts=now_iso(), genseq=genseq, provider="p", model="m", usage=usage))
    files.write_latest(LatestState(last_modified=now_iso(), current_course=courses))
    return root_id


class _Opens:
    """Course files ``dialog_facts`` opens (its reads of a dialog's files), counted by name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.courses: list[str] = []

        def counting_open(path: str, *args: Any, **kwargs: Any) -> Any:
            name = os.path.basename(path)
            if name.startswith("course-"):
                self.courses.append(name)
            return open(path, *args, **kwargs)

        monkeypatch.setattr(dialog_facts, "open", counting_open, raising=False)


def test_a_changed_dialog_is_read_again_without_its_finished_courses(store: DialogStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost this pins: the index read every course file of a dialog whose files changed (for its
    tokens and its digest), so each change of a long dialog cost its whole history. Now the finished
    courses are kept (their generations, digest, first bad line) and only the current course is read."""
    rtws = store.rtws
    root_id = _long_dialog(store, courses=4, generations=30)
    _age_everything(rtws.dialogs_dir)
    index = DialogIndex(rtws)
    opens = _Opens(monkeypatch)
    index.entries(("run",))
    assert sorted(opens.courses) == [f"course-00{n}.jsonl" for n in range(1, 5)], "the first read reads them all"

    files = store.files("run", root_id, root_id)
    files.append(4, GenFinishRecord(ts=now_iso(), genseq=31, provider="p", model="m", usage=Usage(input_tokens=5)))
    files.write_latest(files.read_latest())
    opens.courses.clear()
    [entry] = DialogIndex(rtws).entries(("run",))  # a new connection: what another process would find
    assert opens.courses == ["course-004.jsonl"], "only the current course is read again"
    truth = DialogIndex(rtws, persistent=False).entries(("run",))[0]
    assert entry.facts["generations"] == truth.facts["generations"] and len(entry.facts["generations"]) == 4 * 30 + 1
    assert entry.digest == truth.digest, "the digest of kept courses equals that of their bytes"

    # a finished course edited by hand (a line made bad): its stat changes, it is read again and flagged
    with open(files.course(2), "ab") as handle:
        handle.write(b"not json\n{}\n")
    opens.courses.clear()
    [entry] = DialogIndex(rtws).entries(("run",))
    assert sorted(opens.courses) == ["course-002.jsonl", "course-004.jsonl"]
    assert "course-002.jsonl" in entry.facts["error"]


def test_a_tree_settled_during_the_first_refresh_is_not_read_twice(store: DialogStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost this pins: on a first start (no index yet) recovery settles trees while it is still
    iterating the refresh (``recovery.recover`` → ``unload_if_at_rest`` → ``settle``), and the rows read so
    far were only written in batches of 500: ``settle`` found none for its tree and read every dialog of
    it again (2,000 of 10,000 dialogs read twice on a first start of the cold-start bench)."""
    for _ in range(8):
        _tree(store)
    _age_everything(store.rtws.dialogs_dir)
    index = DialogIndex(store.rtws)
    counts = _Counts(monkeypatch)
    settled = [index.settle(tree.root.status, tree.root.root_id) for tree in index.iter_trees(("run",))]
    assert settled == [True] * 8
    assert counts.reads == 8 * (1 + SUBS), "each dialog read once"
    counts.reset()
    assert all(t.settled for t in index.trees(("run",))) and counts.reads == 0
