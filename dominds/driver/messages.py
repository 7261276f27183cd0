"""Turn course records into the provider-neutral context messages the model sees.

A generation whose reply was cut (output limit, broken stream, stop) is followed by a note saying so,
so the model knows on its next turn that what it wrote was incomplete.

A tool-form tellask (``TellaskCallRecord``) is a tool call whose result is its note, reply or answer: the
first one recorded before a later generation read the course (a later generation's output marks that it
did). One that comes after is a message at its own place, and the call's result stays
``PENDING_TOOL_FORM_RESULT``: what a generation saw is what every later one sees, and the reply is
delivered once.
"""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.driver.texts import cut_reply_note
from dominds.llm.base import ChatMessage, SharedRun
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
    TellaskCallRecord,
)

PENDING_TOOL_FORM_RESULT = (
    "[Dominds] No reply yet: it will be given to you as a message when it arrives. Do not repeat the call."
)
"""The result of a tool-form tellask whose reply had not arrived when a later generation read the course
(the caller was driven meanwhile, e.g. to answer an ask-back): providers need every call answered at once."""

_GENERATION_OUTPUT = (AgentThoughtRecord, AgentWordsRecord, FuncCallRecord, TellaskCallRecord, GenFinishRecord)


def context_messages(records: list[CourseRecord]) -> list[ChatMessage]:
    """Messages of the current course in order. Runtime-only records (markers, gen start/finish) are skipped.

    A function call appears only once its result is recorded (providers reject unpaired calls), and a
    result only when its call is in the course (not in an earlier one)."""
    return CourseMessages().feed(records).messages()


def dialog_context_messages(dialog: Dialog) -> tuple[list[ChatMessage], SharedRun]:
    """``context_messages`` of the dialog's current course, kept with the in-memory course and brought up
    to date with the records appended since the last generation: a turn converts its own records, not
    the whole course again (that walk made a turn at 5,000 turns cost 20 times one at 10); and what is
    known of them (``CourseMessages.context``)."""
    records = dialog.records  # reads the course again if it was released (which empties the cache)
    cached = dialog.course_cache.get(_CACHE_KEY)
    if not isinstance(cached, CourseMessages):
        cached = dialog.course_cache[_CACHE_KEY] = CourseMessages()
    return cached.feed(records[cached.seen :]).context()


_CACHE_KEY = "context_messages"


class CourseMessages:
    """The context messages of one course, built record by record in order.

    Each record takes one slot; a slot is empty while the record has no message: a function call whose
    result is not recorded yet, a result whose call is not in this course. A slot is filled when its
    partner arrives, so the messages are the same as a conversion of the whole course at once."""

    __slots__ = (
        "seen", "_slots", "_called", "_answered", "_calls_waiting", "_results_waiting", "_tool_form", "_tool_form_waiting",
        "_settled", "_settled_count",
    )  # fmt: skip

    def __init__(self) -> None:
        self.seen = 0
        """Records fed so far."""
        self._slots: list[ChatMessage | None] = []
        # Keyed by generation and id: servers repeat ids across replies (llama.cpp's ``call_0``).
        self._called: set[tuple[int, str]] = set()
        self._answered: set[tuple[int, str]] = set()
        self._calls_waiting: dict[tuple[int, str], list[tuple[int, FuncCallRecord]]] = {}
        self._results_waiting: dict[tuple[int, str], list[tuple[int, FuncResultRecord]]] = {}
        self._tool_form: dict[str, TellaskCallRecord] = {}
        """Tool-form tellasks of this course by call id."""
        self._tool_form_waiting: dict[str, int] = {}
        """Call id → slot of the result of a tool-form tellask no later generation has read yet."""
        self._settled: list[ChatMessage] = []
        self._settled_count = 0
        """The messages of the first ``_settled_count`` slots, none of which can change any more (no
        partner is awaited there): only the slots after them are filtered again for a generation."""

    def messages(self) -> list[ChatMessage]:
        return self.context()[0]

    def context(self) -> tuple[list[ChatMessage], SharedRun]:
        """The messages, a new list (callers insert into it), and what is known of them: they start with
        the settled ones, a list of this course's that only grows (``SharedRun``). The slots before the
        first one still awaiting a partner are filtered once and kept; filtering every slot at each
        generation (in C: a ChatMessage is always truthy) was 1.3 ms of a turn at 5,000 turns."""
        open_from = self._first_open_slot()
        if open_from > self._settled_count:
            self._settled.extend(filter(None, self._slots[self._settled_count : open_from]))
            self._settled_count = open_from
        return [*self._settled, *filter(None, self._slots[self._settled_count :])], SharedRun(self._settled, 0, len(self._settled))

    def _first_open_slot(self) -> int:
        """The first slot a later record may still fill or replace (``len(_slots)`` if none)."""
        first = min(self._tool_form_waiting.values(), default=len(self._slots))
        for waiting in (self._calls_waiting, self._results_waiting):
            for entries in waiting.values():
                first = min(first, entries[0][0])
        return first

    def feed(self, records: list[CourseRecord]) -> CourseMessages:
        for record in records:
            self._add(record)
        self.seen += len(records)
        return self

    def _add(self, record: CourseRecord) -> None:
        if isinstance(record, _GENERATION_OUTPUT) and self._tool_form_waiting:
            # A later generation read the course: a call still without its result keeps the pending one.
            for call_id in [c for c in self._tool_form_waiting if self._tool_form[c].genseq < record.genseq]:
                del self._tool_form_waiting[call_id]
        if isinstance(record, TellaskCallRecord):
            self._tool_form[record.call_id] = record
            self._slots.append(_tool_form_call(record))
            self._tool_form_waiting[record.call_id] = len(self._slots)
            self._slots.append(_tool_form_result(record, PENDING_TOOL_FORM_RESULT, False))
            return
        reply = _reply_to(record, self._tool_form) if self._tool_form_waiting else None
        if reply is not None and reply[0] in self._tool_form_waiting:
            call_id, text, is_error = reply
            self._slots[self._tool_form_waiting.pop(call_id)] = _tool_form_result(self._tool_form[call_id], text, is_error)
            self._slots.append(None)  # given as the tool call's result
            return
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
        content=record.context_note or record.content,
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


def _reply_to(record: CourseRecord, tool_form: dict[str, TellaskCallRecord]) -> tuple[str, str, bool] | None:
    """(call id, text, is_error) when ``record`` answers a tellask call."""
    if isinstance(record, TeammateCallResultRecord) and record.status == "failed":
        return record.call_id, record.result, True
    if isinstance(record, TeammateResponseRecord):
        return record.call_id, record.result, record.status == "failed"
    if isinstance(record, HumanTextRecord) and record.origin == "q4h_answer" and record.question_id:
        call_id = record.question_id.rsplit("-", 1)[-1]  # ``q4h-<selfId>-<callId>``; a runtime call id has no '-'
        call = tool_form.get(call_id)
        if call is not None and call.tellask_head.startswith("@human"):
            return call_id, record.content, False
    return None


def _tool_form_call(record: TellaskCallRecord) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        kind="tool_call",
        tool_call_id=record.tool_call_id,
        tool_name=record.tool_name,
        arguments=record.arguments,
        genseq=record.genseq,
    )


def _tool_form_result(record: TellaskCallRecord, text: str, is_error: bool) -> ChatMessage:
    return ChatMessage(
        role="tool",
        kind="tool_result",
        content=text,
        tool_call_id=record.tool_call_id,
        tool_name=record.tool_name,
        is_error=is_error,
        genseq=record.genseq,
    )
