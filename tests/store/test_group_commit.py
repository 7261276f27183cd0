"""Group commit (store/commit.py): one fsync per file and one per directory for the writes of a group,
and nothing acknowledged or published before its fsync.

Bug this replaces: every write fsynced on its own, one after the other on the event loop; a 100-way
fan-out waited on ~1,500 fsyncs in a row (0.6–2.4 s, most of it waiting).
"""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest
from deadlines import until

from dominds.store import atomic, commit
from dominds.store.atomic import append_line, remove_file, write_atomic


class FsyncLog:
    """Every fsync of the process as (path, is_dir), in order (read from /proc/self/fd)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.fail_with: int | None = None
        real = os.fsync

        def fsync(fd: int) -> None:
            if self.fail_with is not None:
                raise OSError(self.fail_with, os.strerror(self.fail_with))
            path = os.readlink(f"/proc/self/fd/{fd}")
            self.calls.append((path, os.path.isdir(path)))
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(atomic, "_FSYNC", True)

    def files(self) -> list[str]:
        return [p for p, is_dir in self.calls if not is_dir]

    def dirs(self) -> list[str]:
        return [p for p, is_dir in self.calls if is_dir]


async def test_a_group_fsyncs_each_file_and_each_directory_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    group = commit.enable()
    assert group is not None
    try:
        a, b = tmp_path / "a", tmp_path / "b"
        for index in range(5):  # the same files again and again within one group
            write_atomic(a / "latest.yaml", f"v: {index}\n")
            write_atomic(b / "latest.yaml", f"v: {index}\n")
            append_line(a / "course-001.jsonl", f'{{"n": {index}}}')
        remove_file(b / "latest.yaml")
        assert log.calls == [], "nothing is fsynced while the group is being written"
        await commit.durable()
    finally:
        await commit.disable()
    assert sorted(log.files()) == sorted([str(a / "latest.yaml"), str(a / "course-001.jsonl")])
    assert sorted(log.dirs()) == sorted([str(a), str(b)])
    first_dir = min(i for i, (_, is_dir) in enumerate(log.calls) if is_dir)
    last_file = max(i for i, (_, is_dir) in enumerate(log.calls) if not is_dir)
    assert last_file < first_dir, "a group's data is durable before any of its directory entries"
    assert group.commits == 1


async def test_nothing_waiting_for_durability_runs_before_its_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    commit.enable()
    order: list[str] = []
    try:
        commit.after_durable(lambda: order.append("nothing written yet: at once"))
        assert order == ["nothing written yet: at once"]
        write_atomic(tmp_path / "one.yaml", "a: 1\n")
        seen_at_release: list[tuple[str, bool]] = []
        commit.after_durable(lambda: (order.append("after one"), seen_at_release.extend(log.calls)))
        write_atomic(tmp_path / "two.yaml", "a: 2\n")
        commit.after_durable(lambda: order.append("after two"))
        assert order == ["nothing written yet: at once"], "held until durable"
        await commit.durable()
    finally:
        await commit.disable()
    assert order[1:] == ["after one", "after two"], "in the order given"
    assert (str(tmp_path / "one.yaml"), False) in seen_at_release, "its file was fsynced before it ran"
    assert (str(tmp_path), True) in seen_at_release, "and its directory"


async def test_a_failed_fsync_holds_replies_until_it_succeeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    monkeypatch.setattr(commit, "RETRY_SECONDS", 0.01)
    group = commit.enable()
    assert group is not None
    released: list[str] = []
    try:
        log.fail_with = errno.EIO
        write_atomic(tmp_path / "x.yaml", "a: 1\n")
        commit.after_durable(lambda: released.append("reply"))
        await until(lambda: group.problem, "the failed fsync is noticed")
        assert group.problem and "fsync failed" in group.problem
        assert released == [], "a reply whose write is not durable is not sent"
        log.fail_with = None
        await commit.durable()
        assert released == ["reply"] and group.problem is None
    finally:
        await commit.disable()


async def test_without_a_committer_every_write_is_durable_when_it_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    write_atomic(tmp_path / "s.yaml", "a: 1\n")
    assert len(log.files()) == 1 and log.dirs() == [str(tmp_path)]
    append_line(tmp_path / "c.jsonl", "{}")
    assert log.files()[-1] == str(tmp_path / "c.jsonl")


def test_a_thread_without_an_event_loop_writes_synchronously(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    assert commit.current() is None
    write_atomic(tmp_path / "t.yaml", "a: 1\n")
    assert len(log.calls) == 2


async def test_steps_that_follow_each_other_without_waiting_share_one_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: a turn's steps (message accepted, generation started, reply recorded, run state settled) run in
    successive loop turns without the loop ever waiting, and each paid a group of fsyncs of its own (four
    rounds per turn). A group now waits while the loop has ready work, up to ``MAX_COMMIT_DELAY``."""
    log = FsyncLog(monkeypatch)
    monkeypatch.setattr(commit, "MAX_COMMIT_DELAY", 60.0)  # a loaded machine must not split the group
    group = commit.enable()
    assert group is not None
    try:

        async def step(index: int) -> None:
            for _ in range(index):
                await asyncio.sleep(0)  # each step a loop turn after the previous one
            write_atomic(tmp_path / "latest.yaml", f"v: {index}\n")
            append_line(tmp_path / "course-001.jsonl", f'{{"n": {index}}}')

        await asyncio.gather(*(step(i) for i in range(6)))
        await commit.durable()
        assert group.commits == 1, "six steps in a row, one group"
        assert sorted(log.files()) == sorted([str(tmp_path / "latest.yaml"), str(tmp_path / "course-001.jsonl")])

        log.calls.clear()
        write_atomic(tmp_path / "latest.yaml", "v: idle\n")
        await asyncio.sleep(0.05)  # the loop waits (a provider's network, a person): the group commits meanwhile
        assert group.commits == 2 and log.files() == [str(tmp_path / "latest.yaml")]

        monkeypatch.setattr(commit, "MAX_COMMIT_DELAY", 0.0)  # a loop that never runs out of work still commits
        await asyncio.gather(*(step(i) for i in range(4)))
        await commit.durable()
        assert group.commits >= 5, "each step committed on its own once the delay is used up"
    finally:
        await commit.disable()


async def test_a_deferred_state_write_is_made_once_before_the_groups_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``defer``: a state file saved several times within a group is written once, when the group commits,
    before its fsyncs; anything acknowledged after the request waits for that write to be durable."""
    log = FsyncLog(monkeypatch)
    group = commit.enable()
    assert group is not None
    writes: list[str] = []
    released: list[list[tuple[str, bool]]] = []
    state = {"v": 0}

    def save() -> None:
        writes.append(f"v: {state['v']}")
        write_atomic(tmp_path / "latest.yaml", f"v: {state['v']}\n")

    try:
        for value in range(1, 4):
            state["v"] = value
            commit.defer("dialog-1", save)
        commit.after_durable(lambda: released.append(list(log.calls)))
        assert writes == [] and released == [], "nothing written or released before the group commits"
        await commit.durable()
        assert writes == ["v: 3"], "one write, of the state as it is when the group commits"
        assert released and (str(tmp_path / "latest.yaml"), False) in released[0], "released after its fsync"
        assert (tmp_path / "latest.yaml").read_text() == "v: 3\n"
    finally:
        await commit.disable()
    commit.defer("dialog-1", save)  # without a committer: written at once
    assert writes == ["v: 3", "v: 3"]


async def test_a_group_committed_on_a_busy_loop_carries_a_deferred_write_over_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: on a saturated loop (a 100-way fan-out) groups commit every ``MAX_COMMIT_DELAY`` while
    generations are under way, and each such group made the deferred start-of-generation state write of
    every dialog generating at that moment, which the generation's end then wrote again: ~100 extra
    replaces of ``latest.yaml`` (and their fsyncs) per fan-out. A group committed only because the loop
    stayed busy now carries a deferred write over to the next group, once; whatever was issued after it
    is released only with that group."""
    log = FsyncLog(monkeypatch)
    monkeypatch.setattr(commit, "MAX_COMMIT_DELAY", 0.0)
    group = commit.enable()
    assert group is not None
    latest, course = tmp_path / "latest.yaml", tmp_path / "course-001.jsonl"
    state = {"dirty": False, "v": "start"}
    writes: list[str] = []
    released: list[str] = []

    def save() -> None:  # a dialog's deferred save: a no-op once the state was saved since
        if state["dirty"]:
            state["dirty"] = False
            writes.append(state["v"])
            write_atomic(latest, f"v: {state['v']}\n")

    loop = asyncio.get_running_loop()
    stop = False

    def busy() -> None:  # other work always ready: every group is committed because the delay is used up
        if not stop:
            loop.call_soon(busy)

    busy()
    try:
        await asyncio.sleep(0)
        append_line(course, '{"n": 1}')
        commit.after_durable(lambda: released.append("before"))
        state["dirty"] = True
        commit.defer("dialog-1", save)  # the generation's start
        commit.after_durable(lambda: released.append("after"))
        await asyncio.sleep(0)  # the group commits in this loop turn, before this task resumes
        assert group.commits == 1 and released == ["before"], "what came before the deferred write is released"
        assert writes == [] and str(course) in log.files(), "the write was carried over; the course is durable"

        state["dirty"] = False  # the generation's end saves the state itself: the carried write is moot
        write_atomic(latest, "v: end\n")
        await commit.durable()
        assert writes == [] and released == ["before", "after"]
        assert latest.read_text() == "v: end\n"

        state["dirty"] = True  # carried over once only: a state still unsaved is written by the next group
        state["v"] = "again"
        commit.defer("dialog-1", save)
        await commit.durable()
        assert writes == ["again"] and latest.read_text() == "v: again\n"
    finally:
        stop = True
        await commit.disable()


async def test_a_new_append_only_file_makes_its_directory_entry_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new course file is durable only once its directory is fsynced too. The bug this holds: that
    directory fsync (alone, and within a group) could be removed with every test green, since in the
    daemon a state write in the same directory usually fsyncs it as well; a new course file with no such
    write would then vanish in a power cut with the replies it held. Appends to an existing file do not
    fsync the directory again."""
    log = FsyncLog(monkeypatch)
    course = tmp_path / "d" / "course-002.jsonl"
    course.parent.mkdir()
    append_line(course, '{"n": 1}')
    assert log.calls == [(str(course), False), (str(course.parent), True)], "file, then its new entry"
    log.calls.clear()
    append_line(course, '{"n": 2}')
    assert log.calls == [(str(course), False)], "an existing file's entry is durable already"

    log.calls.clear()
    other = tmp_path / "e" / "course-003.jsonl"
    other.parent.mkdir()
    group = commit.enable()
    assert group is not None
    try:
        append_line(other, '{"n": 1}')
        await commit.durable()
    finally:
        await commit.disable()
    assert log.calls == [(str(other), False), (str(other.parent), True)], "in a group too"


def test_a_spare_written_in_place_outside_a_group_is_fsynced_before_the_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``latest.yaml`` is replaced by writing the next version over its spare and swapping the names.
    Outside a group commit the spare's bytes must be fsynced before the swap is made durable; the bug this
    holds: that fsync could be removed with every test green (a power cut after the swap's directory fsync
    would then leave ``latest.yaml`` naming blocks never written)."""
    path = tmp_path / "latest.yaml"
    write_atomic(path, "v: 1\n", spare=True)
    write_atomic(path, "v: 2\n", spare=True)  # the first version becomes the spare
    spare = tmp_path / ".latest.yaml.spare"
    assert spare.read_text() == "v: 1\n"
    log = FsyncLog(monkeypatch)
    write_atomic(path, "v: 3\n", spare=True)  # written over the spare in place, then swapped
    assert path.read_text() == "v: 3\n" and spare.read_text() == "v: 2\n"
    assert log.calls == [(str(spare), False), (str(tmp_path), True)], "the bytes, then the swapped names"
