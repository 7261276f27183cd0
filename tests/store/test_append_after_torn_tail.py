"""Appending after a crash-torn last line (issue 15): the next append never glues two records together.

Bug (found by the repeated-SIGKILL writer test): a process killed mid-append can leave a partial last line
(a write may stop at a page boundary). The next process appended right after it, so one bad line sat in
the middle of the course and the dialog refused to load.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from dominds.store import atomic
from dominds.store.course_records import GenStartRecord
from dominds.store.errors import WriteFailedError
from dominds.store.fileio import append_record, read_course


def test_a_torn_tail_is_cut_before_the_next_append(tmp_path: Path) -> None:
    course = tmp_path / "course-001.jsonl"
    append_record(course, GenStartRecord(ts="t1", genseq=1))
    with course.open("ab") as stream:
        stream.write(b'{"type":"gen_start_record","ts":"half a rec')
    append_record(course, GenStartRecord(ts="t2", genseq=2))
    assert [r.genseq for r in read_course(course)] == [1, 2]  # type: ignore[union-attr]
    assert course.read_bytes().count(b"\n") == 2


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path: Path) -> None:
    course = tmp_path / "course-001.jsonl"
    append_record(course, GenStartRecord(ts="t1", genseq=1))
    with course.open("ab") as stream:
        stream.write(b'{"type":"gen_start_record","ts":"t2","genseq":2}')
    append_record(course, GenStartRecord(ts="t3", genseq=3))
    assert [r.genseq for r in read_course(course)] == [1, 2, 3]  # type: ignore[union-attr]


def test_a_file_that_is_one_torn_line_is_emptied_first(tmp_path: Path) -> None:
    course = tmp_path / "course-001.jsonl"
    course.write_bytes(b'{"type":"gen_sta')
    append_record(course, GenStartRecord(ts="t1", genseq=1))
    assert [r.genseq for r in read_course(course)] == [1]  # type: ignore[union-attr]


def _half_then_full(real_write: Callable[[int, bytes], int]) -> Callable[[int, bytes], int]:
    """An ``os.write`` on a disk that fills up: a lone newline (the mending of a whole last record) goes
    through, any other write stores half its bytes and fails with ENOSPC."""

    def write(fd: int, data: bytes) -> int:
        if data == b"\n":
            return real_write(fd, data)
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


def test_a_torn_tail_cut_and_then_a_full_disk_leaves_only_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The size a torn tail was cut back to is where a failed append cuts the file again. Survivor of the
    module-wide mutation sample (issue 38): that size returned as ``None`` made the cut-back raise a
    ``TypeError`` past the ``WriteFailedError`` the caller handles, and left half a line behind."""
    course = tmp_path / "course-001.jsonl"
    append_record(course, GenStartRecord(ts="t1", genseq=1))
    whole = course.read_bytes()
    with course.open("ab") as stream:
        stream.write(b'{"type":"gen_start_record","ts":"half a rec')
    real_write = os.write
    monkeypatch.setattr(atomic.os, "write", _half_then_full(real_write))
    with pytest.raises(WriteFailedError, match="no space left"):
        append_record(course, GenStartRecord(ts="t2", genseq=2))
    monkeypatch.setattr(atomic.os, "write", real_write)
    assert course.read_bytes() == whole


def test_a_whole_last_record_mended_and_then_a_full_disk_keeps_that_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A complete last record without its newline gets one before the append; the append failing after
    that cuts back to the mended size (a ``None`` size: a ``TypeError`` and half a line kept)."""
    course = tmp_path / "course-001.jsonl"
    append_record(course, GenStartRecord(ts="t1", genseq=1))
    with course.open("ab") as stream:
        stream.write(b'{"type":"gen_start_record","ts":"t2","genseq":2}')
    mended = course.read_bytes() + b"\n"
    real_write = os.write
    monkeypatch.setattr(atomic.os, "write", _half_then_full(real_write))
    with pytest.raises(WriteFailedError, match="no space left"):
        append_record(course, GenStartRecord(ts="t3", genseq=3))
    monkeypatch.setattr(atomic.os, "write", real_write)
    assert course.read_bytes() == mended
    assert [r.genseq for r in read_course(course)] == [1, 2]  # type: ignore[union-attr]


def test_a_course_file_that_is_a_symbolic_link_is_refused_with_the_reason(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")
    course = tmp_path / "course-001.jsonl"
    course.symlink_to(elsewhere)
    with pytest.raises(WriteFailedError) as raised:
        append_record(course, GenStartRecord(ts="t1", genseq=1))
    assert raised.value.problem == atomic.SYMLINK_PROBLEM
    assert elsewhere.read_text() == "", "never written through the link"
