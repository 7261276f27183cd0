"""A replace within a group commit frees the replaced file in a thread, never on the event loop.

Bug this pins (issue 21): the rename of a state file over its old version freed the old inode on the
event loop, and freeing a file truncates it: on a file system mounted with ``discard`` (ext4 on the
VM the benches run on) every freed block was discarded synchronously on the device, ~40 % of the
rename's time (``perf``: ``ext4_evict_inode`` → ``blkdev_issue_discard`` → ``submit_bio_wait``),
105 times in a 100-way fan-out. ``write_atomic`` now holds an ``O_PATH`` reference to the old file
across the rename and a thread of its own drops it.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from dominds.store import atomic, commit
from dominds.store.atomic import write_atomic
from dominds.store.errors import WriteFailedError

pytestmark = pytest.mark.skipif(not getattr(os, "O_PATH", 0), reason="O_PATH is Linux's")


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def refers_to(fd: int, inode: int) -> bool:
    try:
        return os.fstat(fd).st_ino == inode
    except OSError:  # closed
        return False


async def wait_until(predicate: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


async def test_the_replaced_file_is_still_referenced_after_the_rename_and_released_by_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(atomic, "_FSYNC", True)
    path = tmp_path / "latest.yaml"
    path.write_text("v: old\n")
    old_inode = path.stat().st_ino
    held: list[tuple[int, int, int]] = []
    real_release = atomic._releaser.release

    def release(fd: int) -> None:
        info = os.fstat(fd)
        held.append((fd, info.st_ino, info.st_nlink))
        real_release(fd)

    monkeypatch.setattr(atomic._releaser, "release", release)
    group = commit.enable()
    assert group is not None
    try:
        write_atomic(path, "v: new\n")
        await commit.durable()
    finally:
        await commit.disable()
    assert path.read_text() == "v: new\n" and path.stat().st_ino != old_inode
    assert [(ino, links) for _, ino, links in held] == [(old_inode, 0)], "the old file, unlinked, was still held"
    fd = held[0][0]
    await wait_until(lambda: not refers_to(fd, old_inode), "the thread closes it")


async def test_a_first_write_holds_nothing_and_no_descriptor_is_left_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "_FSYNC", True)
    before = open_fds()
    group = commit.enable()
    assert group is not None
    try:
        for index in range(20):
            write_atomic(tmp_path / "state.yaml", f"v: {index}\n")
            write_atomic(tmp_path / f"new-{index}.yaml", "fresh\n")
        await commit.durable()
    finally:
        await commit.disable()
    assert (tmp_path / "state.yaml").read_text() == "v: 19\n"
    await wait_until(lambda: len(open_fds()) <= len(before), "every held descriptor is closed")


async def test_a_failed_rename_closes_the_held_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "_FSYNC", True)
    target = tmp_path / "latest.yaml"
    target.mkdir()
    (target / "inside").write_text("a directory that is not empty cannot be replaced by a file\n")
    group = commit.enable()
    assert group is not None
    try:
        before = open_fds()
        with pytest.raises(WriteFailedError):
            write_atomic(target, "v: 1\n")
        assert open_fds() == before
        assert os.listdir(tmp_path) == ["latest.yaml"], "no temp file left"
    finally:
        await commit.disable()


def test_without_a_group_the_rename_frees_the_file_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(atomic._releaser, "release", calls.append)
    path = tmp_path / "latest.yaml"
    write_atomic(path, "v: 1\n")
    write_atomic(path, "v: 2\n")
    assert path.read_text() == "v: 2\n" and calls == []
