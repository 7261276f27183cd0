"""The typed file reader and writer (``store/fileio.py``): what lands on disk and how a bad file is reported.

A module-wide mutation sample left half of this module's mutants alive: a symbolic link reported as an
I/O error, ``null`` fields and ``\\u`` escapes written into files a person reads, a missing course read as
``None``, every branch of the repair of a course's last line, and the parser's reason dropped from the error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dominds.store.course_records import GenStartRecord, HumanTextRecord
from dominds.store.errors import CorruptFileError, UnreadableFileError
from dominds.store.fileio import append_record, load_model, read_course, repair_tail, save_model
from dominds.store.records import DialogMeta, Reminder, RemindersFile


def test_a_linked_state_file_is_corrupt_and_an_unopenable_one_unreadable(tmp_path: Path) -> None:
    """A link is refused as corrupt, with the reason (never followed); a path that cannot be opened for
    another reason (here: its directory is a file) is an unreadable file, not a corrupt one."""
    real = tmp_path / "real.yaml"
    save_model(real, DialogMeta(id="d1", root_id="d1", agent_id="lead", task_doc_path="t.tsk", created_at="x"))
    link = tmp_path / "dialog.yaml"
    link.symlink_to(real)
    with pytest.raises(CorruptFileError, match="is a symbolic link"):
        load_model(link, DialogMeta)
    with pytest.raises(UnreadableFileError) as caught:
        load_model(real / "dialog.yaml", DialogMeta)
    assert not isinstance(caught.value, CorruptFileError)


def test_state_files_hold_set_fields_only_and_readable_text(tmp_path: Path) -> None:
    """An unset optional field is left out (not written as ``null``) and non-ASCII text is stored as
    itself, not as ``\\u`` escapes: state files are plain files a person reads."""
    path = tmp_path / "reminders.json"
    save_model(path, RemindersFile(reminders=[Reminder(id="rem-1", content="买牛奶 ☕")], updated_at="x"))
    text = path.read_text(encoding="utf-8")
    assert "买牛奶 ☕" in text and "\\u" not in text
    assert json.loads(text)["reminders"] == [{"id": "rem-1", "content": "买牛奶 ☕", "createdAt": ""}]
    assert "null" not in text and "owner" not in text


def test_a_course_line_holds_set_fields_only_and_readable_text(tmp_path: Path) -> None:
    path = tmp_path / "course-001.jsonl"
    append_record(path, HumanTextRecord(ts="x", genseq=1, msg_id="m1", content="你好"))
    [line] = path.read_text(encoding="utf-8").splitlines()
    assert "你好" in line and "null" not in line and "questionId" not in line


def test_a_missing_course_file_has_no_records(tmp_path: Path) -> None:
    assert read_course(tmp_path / "course-009.jsonl") == []


def test_a_parse_error_names_the_parsers_reason_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "dialog.yaml"
    path.write_text("id: [unclosed\nrootId: d1\n")
    with pytest.raises(CorruptFileError) as caught:
        load_model(path, DialogMeta)
    assert caught.value.problem.startswith("cannot parse: while parsing a flow sequence")
    assert "\n" not in caught.value.problem and "line 1" in caught.value.problem


LINE_1 = '{"type":"gen_start_record","ts":"t1","genseq":1}\n'
LINE_2 = '{"type":"gen_start_record","ts":"t2","genseq":2}'


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        (LINE_1 + LINE_2 + "\n", LINE_1 + LINE_2 + "\n", False),  # whole: left alone
        ("", "", False),  # empty: left alone
        (LINE_1 + LINE_2, LINE_1 + LINE_2 + "\n", True),  # a whole last record without its newline: mended
        (LINE_1 + LINE_2[:20], LINE_1, True),  # a torn last line: cut
        (LINE_2[:20], "", True),  # one torn line: emptied
    ],
    ids=["whole", "empty", "unterminated", "torn", "only-torn"],
)
def test_repairing_a_course_tail(tmp_path: Path, before: str, after: str, changed: bool) -> None:
    """The last line is made whole before the course is read and appended to (``dialog/loader.py``): a
    torn one is cut, a whole one without its newline gets it, and True says the file was changed."""
    path = tmp_path / "course-001.jsonl"
    path.write_text(before)
    inode = os.stat(path).st_ino
    assert repair_tail(path) is changed
    assert path.read_text() == after
    if not changed:
        assert os.stat(path).st_ino == inode, "a file that needed nothing was rewritten"
    append_record(path, GenStartRecord(ts="t3", genseq=3))
    assert [r.genseq for r in read_course(path)][-1] == 3  # type: ignore[union-attr]


def test_repairing_a_missing_course_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "course-001.jsonl"
    assert repair_tail(path) is False
    assert not path.exists()
