"""Context messages built record by record (``driver/messages.py``) equal a conversion of the whole course.

Bug this guards: a generation filtered every slot of the course (1.3 ms of a turn at 5,000 turns); the
slots before the first one still awaiting a partner are now filtered once and kept, which must never
hide a slot filled later (a call answered in a later piece, a tool-form tellask's reply).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dominds.driver.messages import CourseMessages, context_messages
from dominds.llm.base import ChatMessage, GenerationRequest, SharedRun
from dominds.store.course_records import COURSE_RECORD_ADAPTER, CourseRecord

IDS = st.sampled_from(["a", "b", "c"])
GENSEQ = st.integers(1, 3)


def _record(kind: str, genseq: int, call: str, text: str) -> dict[str, Any]:
    base: dict[str, Any] = {"ts": "t", "genseq": genseq}
    if kind == "human":
        return {**base, "type": "human_text_record", "msgId": f"m{text}", "content": text}
    if kind == "words":
        return {**base, "type": "agent_words_record", "content": text}
    if kind == "call":
        return {**base, "type": "func_call_record", "id": call, "name": "f", "arguments": {}}
    if kind == "result":
        return {**base, "type": "func_result_record", "id": call, "name": "f", "content": text}
    if kind == "tellask":
        return {
            **base, "type": "tellask_call_record", "call_id": call, "tool_call_id": f"t{call}", "tool_name": "tellask",
            "arguments": {}, "tellask_head": "@coder", "tellask_body": text,
        }  # fmt: skip
    return {
        **base, "type": "teammate_response_record", "call_id": call, "responder_id": "coder",
        "callee_dialog_id": "d", "tellask_head": "@coder", "status": "completed", "response": text,
        "result": text, "agent_id": "lead", "origin_member_id": "lead",
    }  # fmt: skip


RECORDS = st.lists(
    st.builds(
        _record,
        st.sampled_from(["human", "words", "call", "result", "tellask", "reply"]),
        GENSEQ,
        IDS,
        st.text(alphabet="xyz", max_size=3),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(RECORDS, st.lists(st.integers(0, 25), max_size=6))
@example([_record("result", 1, "a", "r"), _record("call", 1, "a", "")], [1])  # the result's slot filled later
@example([_record("call", 1, "a", ""), _record("result", 1, "a", "r")], [1])  # the call's slot filled later
@example([_record("tellask", 1, "a", "q"), _record("reply", 1, "a", "r")], [1])  # the pending result replaced
def test_messages_read_between_any_pieces_equal_the_whole_course(raw: list[dict[str, Any]], cuts: list[int]) -> None:
    records: list[CourseRecord] = [COURSE_RECORD_ADAPTER.validate_python(r) for r in raw]
    whole = context_messages(records)
    built = CourseMessages()
    start = 0
    for cut in sorted({min(c, len(records)) for c in cuts}):
        built.feed(records[start:cut])
        assert built.messages() == context_messages(records[:cut])
        start = cut
    assert built.feed(records[start:]).messages() == whole
    again = built.messages()
    if again:
        again.insert(0, again[0])  # callers insert into the list they get
    assert built.messages() == whole


@settings(max_examples=300, deadline=None)
@given(RECORDS, st.lists(st.integers(0, 25), max_size=8))
@example([_record("human", 1, "a", "q"), _record("call", 1, "a", ""), _record("result", 1, "a", "r")], [1, 2, 3])
@example([_record("tellask", 1, "a", "q"), _record("words", 2, "b", "w"), _record("reply", 1, "a", "r")], [1, 2, 3])
def test_what_the_messages_are_said_to_share_holds_between_any_pieces(raw: list[dict[str, Any]], cuts: list[int]) -> None:
    """What ``context()`` says of its messages (``SharedRun``) is what providers reuse a previous request's
    conversion on without comparing: its first ``count`` messages are the run's, the same objects, and
    the run only grows (what an earlier request was told of it stays true)."""
    records: list[CourseRecord] = [COURSE_RECORD_ADAPTER.validate_python(r) for r in raw]
    built = CourseMessages()
    told: list[tuple[SharedRun, list[ChatMessage]]] = []
    start = 0
    for cut in [*sorted({min(c, len(records)) for c in cuts}), len(records)]:
        messages, shared = built.feed(records[start:cut]).context()
        start = cut
        assert shared.start == 0 and shared.count <= len(messages)
        assert all(a is b for a, b in zip(messages[: shared.count], shared.run[: shared.count], strict=True))
        for earlier, snapshot in told:
            assert earlier.run is shared.run
            assert all(a is b for a, b in zip(shared.run[: earlier.count], snapshot, strict=True))
        told.append((shared, list(shared.run[: shared.count])))


async def test_each_generation_is_told_what_its_messages_share_with_the_dialogs_earlier_ones(
    make_engine: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dialog's requests as the driver builds them (the Taskdoc in front, a tool call and its result,
    the reminders moving to the last user message): each says its messages from ``start`` on are its
    course's settled run up to before the reminders, the same objects, and the run they name only grows."""
    from dominds.llm.scripted import ScriptedGenerator

    engine = await make_engine(
        [
            {"message": "remember", "stream": [{"func_call": {"name": "add_reminder", "arguments": {"content": "buy milk"}}}]},
            {"role": "tool", "contains": "Reminder #1 added", "response": "Noted."},
            {"contains": "more", "response": "Sure."},
        ]
    )
    requests: list[GenerationRequest] = []
    real = ScriptedGenerator.generate

    async def recording(self: ScriptedGenerator, request: GenerationRequest, receiver: Any) -> Any:
        requests.append(request)
        return await real(self, request, receiver)

    monkeypatch.setattr(ScriptedGenerator, "generate", recording)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    for text in ("remember", "more", "more again"):
        engine.submit_user_message(root, text)
        await engine.wait_idle()
    assert len(requests) == 4 and requests[-1].messages[-2].volatile, "the reminders before the last user message"
    told: list[tuple[SharedRun, list[ChatMessage]]] = []
    for request in requests:
        shared = request.shared_run
        assert shared is not None and shared.start + shared.count <= len(request.messages)
        assert shared.start >= 1, "the Taskdoc message in front"
        mine = request.messages[shared.start : shared.start + shared.count]
        assert all(a is b for a, b in zip(mine, shared.run, strict=False)) and not any(m.volatile for m in mine)
        for earlier, snapshot in told:
            assert earlier.run is shared.run and all(a is b for a, b in zip(shared.run, snapshot, strict=False))
        told.append((shared, list(mine)))
    assert told[-1][0].count > told[0][0].count, "the run grew"
