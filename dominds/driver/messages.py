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
)


def context_messages(records: list[CourseRecord]) -> list[ChatMessage]:
    """Messages of the current course in order. Runtime-only records (markers, gen start/finish) are skipped."""
    out: list[ChatMessage] = []
    # Paired by generation and id: servers repeat ids across replies (llama.cpp's ``call_0``).
    answered = {(r.genseq, r.id) for r in records if isinstance(r, FuncResultRecord)}
    called = {(r.genseq, r.id) for r in records if isinstance(r, FuncCallRecord)}
    for record in records:
        if isinstance(record, HumanTextRecord):
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
            if (record.genseq, record.id) not in answered:
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
            if (record.genseq, record.id) not in called:
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
