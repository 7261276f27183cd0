"""Appending after a crash-torn last line (issue 15): the next append never glues two records together.

Bug (found by the repeated-SIGKILL writer test): a process killed mid-append can leave a partial last line
(a write may stop at a page boundary). The next process appended right after it, so one bad line sat in
the middle of the course and the dialog refused to load.
"""

from __future__ import annotations

from pathlib import Path

from dominds.store.course_records import GenStartRecord
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
