"""Assertions over a dialog's records."""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.store.course_records import AgentWordsRecord, CourseRecord, GenStartRecord


def types(dialog: Dialog) -> list[str]:
    return [r.type for r in dialog.files.read_course(dialog.latest.current_course)]


def records(dialog: Dialog) -> list[CourseRecord]:
    return dialog.files.read_course(dialog.latest.current_course)


def sayings(dialog: Dialog) -> list[str]:
    return [r.content for r in records(dialog) if isinstance(r, AgentWordsRecord)]


def generations(dialog: Dialog) -> int:
    return sum(isinstance(r, GenStartRecord) for r in records(dialog))
