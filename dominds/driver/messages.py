"""Turn course records into the provider-neutral context messages the model sees.

A generation whose reply was cut (output limit, broken stream, stop) is followed by a note saying so,
so the model knows on its next turn that what it wrote was incomplete.
"""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.driver.texts import cut_reply_note
from dominds.llm.base import ChatMessage
from dominds.store.course_records import (
    AgentThoughtRecord,
    AgentWordsRecord,
    CourseRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    HumanTextRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
)


def context_messages(records: list[CourseRecord]) -> list[ChatMessage]:
    """Messages of the current course in order. Runtime-only records (markers, gen start/finish) are skipped.

    A function call appears only once its result is recorded (providers reject unpaired calls), and a
    result only when its call is in the course (not in an earlier one)."""
    return CourseMessages().feed(records).messages()


def dialog_context_messages(dialog: Dialog) -> list[ChatMessage]:
    """``context_messages`` of the dialog's current course, kept with the in-memory course and brought up
    to date with the records appended since the last generation: a turn converts its own records, not
    the whole course again (that walk made a turn at 5,000 turns cost 20 times one at 10)."""
    records = dialog.records  # reads the course again if it was released (which empties the cache)
    cached = dialog.course_cache.get(_CACHE_KEY)
    if not isinstance(cached, CourseMessages):
        cached = dialog.course_cache[_CACHE_KEY] = CourseMessages()
    return cached.feed(records[cached.seen :]).messages()


_CACHE_KEY = "context_messages"


class CourseMessages:
    """The context messages of one course, built record by record in order.

    Each record takes one slot; a slot is empty while the record has no message: a function call whose
    result is not recorded yet, a result whose call is not in this course. A slot is filled when its
    partner arrives, so the messages are the same as a conversion of the whole course at once."""

    __slots__ = ("seen", "_slots", "_called", "_answered", "_calls_waiting", "_results_waiting")

    def __init__(self) -> None:
        self.seen = 0
        """Records fed so far."""
        self._slots: list[ChatMessage | None] = []
        # Keyed by generation and id: servers repeat ids across replies (llama.cpp's ``call_0``).
        self._called: set[tuple[int, str]] = set()
        self._answered: set[tuple[int, str]] = set()
        self._calls_waiting: dict[tuple[int, str], list[tuple[int, FuncCallRecord]]] = {}
        self._results_waiting: dict[tuple[int, str], list[tuple[int, FuncResultRecord]]] = {}

    def messages(self) -> list[ChatMessage]:
        """A new list (callers insert into it)."""
        return [message for message in self._slots if message is not None]

    def feed(self, records: list[CourseRecord]) -> CourseMessages:
        for record in records:
            self._add(record)
        self.seen += len(records)
        return self

    def _add(self, record: CourseRecord) -> None:
        if isinstance(record, FuncCallRecord):
            key = (record.genseq, record.id)
            self._called.add(key)
            if key in self._answered:
                self._slots.append(_call_message(record))
            else:
                self._calls_waiting.setdefault(key, []).append((len(self._slots), record))
                self._slots.append(None)
            for index, result in self._results_waiting.pop(key, ()):
                self._slots[index] = _result_message(result)
        elif isinstance(record, FuncResultRecord):
            key = (record.genseq, record.id)
            self._answered.add(key)
            if key in self._called:
                self._slots.append(_result_message(record))
            else:
                self._results_waiting.setdefault(key, []).append((len(self._slots), record))
                self._slots.append(None)
            for index, call in self._calls_waiting.pop(key, ()):
                self._slots[index] = _call_message(call)
        else:
            self._slots.append(_plain_message(record))


def _call_message(record: FuncCallRecord) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        kind="tool_call",
        tool_call_id=record.id,
        tool_name=record.name,
        arguments=record.arguments,
        genseq=record.genseq,
    )


def _result_message(record: FuncResultRecord) -> ChatMessage:
    return ChatMessage(
        role="tool",
        kind="tool_result",
        content=record.content,
        tool_call_id=record.id,
        tool_name=record.name,
        is_error=record.is_error,
        genseq=record.genseq,
    )


def _plain_message(record: CourseRecord) -> ChatMessage | None:
    """The message of a record that needs no partner (None: the model does not see it)."""
    if isinstance(record, HumanTextRecord):
        return ChatMessage(role="user", content=record.content, genseq=record.genseq)
    if isinstance(record, AgentThoughtRecord):
        return ChatMessage(
            role="assistant",
            kind="thinking",
            content=record.content,
            provider_data=record.provider_data,
            genseq=record.genseq,
        )
    if isinstance(record, AgentWordsRecord):
        return ChatMessage(role="assistant", content=record.content, genseq=record.genseq)
    if isinstance(record, TeammateCallResultRecord):
        if record.status == "failed":
            return ChatMessage(role="user", content=record.result, genseq=record.genseq)
        return None
    if isinstance(record, TeammateResponseRecord):
        return ChatMessage(role="user", content=record.result, genseq=record.genseq)
    if isinstance(record, GenFinishRecord) and record.partial:
        note = cut_reply_note(record.finish_reason)
        return ChatMessage(role="user", content=note, genseq=record.genseq, runtime_note=True)
    return None
