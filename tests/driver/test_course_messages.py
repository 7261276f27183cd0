"""Context messages built record by record (``driver/messages.py``) equal a conversion of the whole course.

Bug this guards: a generation filtered every slot of the course (1.3 ms of a turn at 5,000 turns); the
slots before the first one still awaiting a partner are now filtered once and kept, which must never
hide a slot filled later (a call answered in a later piece, a tool-form tellask's reply).
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dominds.driver.messages import CourseMessages, context_messages
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
