"""Turn course records into the provider-neutral context messages the model sees.

A generation whose reply was cut (output limit, broken stream, stop) is followed by a note saying so,
so the model knows on its next turn that what it wrote was incomplete.
"""

from __future__ import annotations

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
    TellaskCallRecord,
)

PENDING_TOOL_FORM_RESULT = (
    "[Dominds] No reply yet: it will be given to you as a message when it arrives. Do not repeat the call."
)
"""The result of a tool-form tellask whose reply had not arrived when a later generation read the course
(the caller was driven meanwhile, e.g. to answer an ask-back): providers need every call answered at once."""

_GENERATION_OUTPUT = (AgentThoughtRecord, AgentWordsRecord, FuncCallRecord, TellaskCallRecord, GenFinishRecord)


def context_messages(records: list[CourseRecord]) -> list[ChatMessage]:
    """Messages of the current course in order. Runtime-only records (markers, gen start/finish) are skipped."""
    out: list[ChatMessage] = []
    answered: set[str] = {r.id for r in records if isinstance(r, FuncResultRecord)}
    called: set[str] = {r.id for r in records if isinstance(r, FuncCallRecord)}
    tool_form_results, hoisted = tool_form_replies(records)
    for index, record in enumerate(records):
        if index in hoisted:
            continue  # the result of a tool-form tellask, given with its call
        if isinstance(record, TellaskCallRecord):
            out.extend(_tool_form_call(record, tool_form_results.get(record.call_id)))
        elif isinstance(record, HumanTextRecord):
            out.append(ChatMessage(role="user", content=record.content, genseq=record.genseq))
        elif isinstance(record, AgentThoughtRecord):
            out.append(
                ChatMessage(
                    role="assistant",
                    kind="thinking",
                    content=record.content,
                    provider_data=record.provider_data,
                    genseq=record.genseq,
                )
            )
        elif isinstance(record, AgentWordsRecord):
            out.append(ChatMessage(role="assistant", content=record.content, genseq=record.genseq))
        elif isinstance(record, FuncCallRecord):
            if record.id not in answered:
                continue  # a call still running has no result yet; providers reject unpaired calls
            out.append(
                ChatMessage(
                    role="assistant",
                    kind="tool_call",
                    tool_call_id=record.id,
                    tool_name=record.name,
                    arguments=record.arguments,
                    genseq=record.genseq,
                )
            )
        elif isinstance(record, FuncResultRecord):
            if record.id not in called:
                continue  # its call is in an earlier course
            out.append(
                ChatMessage(
                    role="tool",
                    kind="tool_result",
                    content=record.content,
                    tool_call_id=record.id,
                    tool_name=record.name,
                    is_error=record.is_error,
                    genseq=record.genseq,
                )
            )
        elif isinstance(record, TeammateCallResultRecord):
            if record.status == "failed":
                out.append(ChatMessage(role="user", content=record.result, genseq=record.genseq))
        elif isinstance(record, TeammateResponseRecord):
            out.append(ChatMessage(role="user", content=record.result, genseq=record.genseq))
        elif isinstance(record, GenFinishRecord) and record.partial:
            note = cut_reply_note(record.finish_reason)
            out.append(ChatMessage(role="user", content=note, genseq=record.genseq, runtime_note=True))
    return out


def tool_form_replies(records: list[CourseRecord]) -> tuple[dict[str, tuple[str, bool]], set[int]]:
    """Each tool-form tellask's result (text, is_error) and the indexes of the records that give it.

    The result is the first note, reply or answer recorded for the call before any later generation read
    the course (a later generation's output marks that it did); one that comes after is a message at its
    own place, and the call's result is ``PENDING_TOOL_FORM_RESULT``. So what a generation saw is what
    every later one sees (the history only grows) and the reply is delivered once.
    """
    calls = {r.call_id: r for r in records if isinstance(r, TellaskCallRecord)}
    if not calls:
        return {}, set()
    human_calls = {c.call_id for c in calls.values() if c.tellask_head.startswith("@human")}
    results: dict[str, tuple[str, bool]] = {}
    hoisted: set[int] = set()
    waiting: list[TellaskCallRecord] = []
    for index, record in enumerate(records):
        if isinstance(record, _GENERATION_OUTPUT):
            waiting = [c for c in waiting if c.genseq >= record.genseq]  # a later generation went past them
        if isinstance(record, TellaskCallRecord):
            waiting.append(record)
            continue
        reply = _reply_to(record, human_calls)
        if reply is None:
            continue
        call_id, text, is_error = reply
        call = calls.get(call_id)
        if call is None or call not in waiting or call_id in results:
            continue
        results[call_id] = (text, is_error)
        hoisted.add(index)
    return results, hoisted


def _reply_to(record: CourseRecord, human_calls: set[str]) -> tuple[str, str, bool] | None:
    """(call id, text, is_error) when ``record`` answers a tellask call."""
    if isinstance(record, TeammateCallResultRecord) and record.status == "failed":
        return record.call_id, record.result, True
    if isinstance(record, TeammateResponseRecord):
        return record.call_id, record.result, record.status == "failed"
    if isinstance(record, HumanTextRecord) and record.origin == "q4h_answer" and record.question_id:
        call_id = record.question_id.rsplit("-", 1)[-1]  # ``q4h-<selfId>-<callId>``; a runtime call id has no '-'
        if call_id in human_calls:
            return call_id, record.content, False
    return None


def _tool_form_call(record: TellaskCallRecord, result: tuple[str, bool] | None) -> list[ChatMessage]:
    text, is_error = result if result is not None else (PENDING_TOOL_FORM_RESULT, False)
    call_id, name, genseq = record.tool_call_id, record.tool_name, record.genseq
    return [
        ChatMessage(role="assistant", kind="tool_call", tool_call_id=call_id, tool_name=name, arguments=record.arguments, genseq=genseq),
        ChatMessage(role="tool", kind="tool_result", content=text, tool_call_id=call_id, tool_name=name, is_error=is_error, genseq=genseq),
    ]
