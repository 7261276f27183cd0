"""The keys a dialog looks its course up by (prompts recorded, teammate responses supplied).

They used to be rebuilt by a scan of every record at each question: a 100-way fan-out asked its caller
once per answer (100 scans of a course growing to ~300 records). They are now kept up to date as
records are appended; these tests hold them equal to a scan through appends, a course replaced and a
transcript released and read back from its file."""

from __future__ import annotations

from typing import Any

from dominds.ids import now_iso
from dominds.store.course_records import HumanTextRecord, TeammateResponseRecord


def _response(callee: str, call_id: str) -> TeammateResponseRecord:
    return TeammateResponseRecord(
        ts=now_iso(),
        call_id=call_id,
        responder_id="coder",
        callee_dialog_id=callee,
        tellask_head="@coder",
        status="completed",
        response="ok",
        result="ok",
        agent_id="lead",
        origin_member_id="lead",
    )


def _prompt(msg_id: str) -> HumanTextRecord:
    return HumanTextRecord(ts=now_iso(), genseq=1, msg_id=msg_id, content="hi")


async def test_the_record_keys_follow_appends_replacements_and_reloads(make_engine: Any) -> None:
    engine = await make_engine([{"agent": "lead", "response": "Hello!"}])
    dialog = engine.create_dialog("lead", "tasks/t.tsk")
    assert ("sub-1", "c1") not in dialog.supplied_response_keys()
    dialog.append(_response("sub-1", "c1"))
    dialog.append(_prompt("m1"))
    assert ("sub-1", "c1") in dialog.supplied_response_keys() and "m1" in dialog.recorded_msg_ids()
    dialog.append(_response("sub-2", "c2"))
    assert set(dialog.supplied_response_keys()) == {("sub-1", "c1"), ("sub-2", "c2")}

    dialog.release_transcript()  # not driving: the in-memory course is dropped, then read back from the file
    assert set(dialog.supplied_response_keys()) == {("sub-1", "c1"), ("sub-2", "c2")}
    assert "m1" in dialog.recorded_msg_ids()

    dialog.records = [_prompt("m2")]  # a new course (or a fresh read) replaces the list as a whole
    assert not dialog.supplied_response_keys() and set(dialog.recorded_msg_ids()) == {"m2"}
    dialog.records.append(_response("sub-3", "c3"))  # appended to the list itself (as Dialog.append does)
    assert set(dialog.supplied_response_keys()) == {("sub-3", "c3")}
