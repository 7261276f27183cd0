"""Forking a main dialog at a generation over the API (issue 35, item 4; driver/fork.py).

The fork's courses match the original's records up to the generation's start, the original's files are
not changed by the fork nor by the fork's run, both go on independently, and the fork says where it came
from. A call still waiting for its teammate at the fork point gets exactly one reply in the fork.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from server_kit import ServeFactory

from dominds.ids import now_iso
from dominds.store.course_records import (
    AgentWordsRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
)

RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "first", "response": "First answer."},
    {"agent": "lead", "message": "second", "response": "Second answer."},
    {"agent": "lead", "message": "second, but in French", "response": "Deuxième réponse."},
    {"agent": "lead", "message": "third", "response": "Third answer."},
    {"agent": "lead", "message": "after the fork", "response": "The fork goes on."},
    {"agent": "lead", "message": "original goes on", "response": "The original goes on."},
]


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _sayings(records: list[Any]) -> list[str]:
    return [r.content for r in records if isinstance(r, AgentWordsRecord)]


def _comparable(records: list[Any]) -> list[dict[str, Any]]:
    return [r.model_dump() for r in records]


async def _driven_root(served: Any, messages: list[str]) -> str:
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id: str = created["rootId"]
    for message in messages:
        status, _ = await served.post(f"/api/dialogs/{root_id}/messages", {"content": message})
        assert status == 202
        await served.engine.wait_idle()
    return root_id


async def test_a_fork_holds_the_history_before_the_generation_and_runs_it_anew(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    root_id = await _driven_root(served, ["first", "second", "third"])
    original = served.engine.get_dialog(root_id)
    before = _digest(original.files.dir)
    records = original.files.read_course(1)
    start_of_second = next(i for i, r in enumerate(records) if isinstance(r, GenStartRecord) and r.genseq == 2)

    status, forked = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 2})
    assert status == 201 and forked["forkedFrom"] == {"rootId": root_id, "course": 1, "genseq": 2, "edited": False}
    await served.engine.wait_idle()
    fork = served.engine.get_dialog(forked["rootId"])
    assert fork.root_id != root_id and fork.is_root and fork.agent_id == "lead"
    copied = fork.files.read_course(1)
    assert _comparable(copied[:start_of_second]) == _comparable(records[:start_of_second]), "the same records"
    # the fork ran generation 2 anew on the same prompt (the same msgId), and nothing after it
    [again] = [r for r in copied if isinstance(r, HumanTextRecord) and r.genseq == 2]
    [prompt] = [r for r in records if isinstance(r, HumanTextRecord) and r.genseq == 2]
    assert (again.content, again.msg_id) == ("second", prompt.msg_id)
    assert _sayings(copied) == ["First answer.", "Second answer."]
    assert _digest(original.files.dir) == before, "the original's files are untouched"

    # both go on independently
    await served.post(f"/api/dialogs/{fork.root_id}/messages", {"content": "after the fork"})
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "original goes on"})
    await served.engine.wait_idle()
    assert _sayings(fork.files.read_course(1))[-1] == "The fork goes on."
    assert _sayings(original.files.read_course(1)) == ["First answer.", "Second answer.", "Third answer.", "The original goes on."]
    status, shown = await served.get(f"/api/dialogs/{fork.root_id}")
    assert status == 200 and shown["forkedFrom"]["rootId"] == root_id, "the panel can link back"
    status, listing = await served.get("/api/dialogs")
    assert {d["rootId"] for d in listing["dialogs"]} == {root_id, fork.root_id}


async def test_a_fork_with_an_edited_message_answers_the_new_text(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    root_id = await _driven_root(served, ["first", "second"])
    status, forked = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 2, "message": "second, but in French"})
    assert status == 201 and forked["forkedFrom"]["edited"] is True
    await served.engine.wait_idle()
    fork = served.engine.get_dialog(forked["rootId"])
    assert _sayings(fork.files.read_course(1)) == ["First answer.", "Deuxième réponse."]
    assert fork.meta.forked_from is not None and fork.meta.forked_from.root_id == root_id


async def test_bad_fork_requests_are_answered_clearly(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    root_id = await _driven_root(served, ["first"])
    status, body = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 7})
    assert status == 400 and "no generation 7" in body["error"] and "1 to 1" in body["error"]
    status, body = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 1, "course": 4})
    assert status == 400 and "no course 4" in body["error"]
    status, body = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": "1"})
    assert status == 400 and "`genseq`" in body["error"]
    status, body = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 1, "message": "   "})
    assert status == 400 and "empty" in body["error"]
    status, body = await served.post("/api/dialogs/0nope-0000/fork", {"genseq": 1})
    assert status == 404
    status, listing = await served.get("/api/dialogs")
    assert [d["rootId"] for d in listing["dialogs"]] == [root_id], "no fork was made by a refused request"


async def test_a_call_still_waiting_at_the_fork_point_gets_one_reply_in_the_fork(serve: ServeFactory) -> None:
    """The fork has no subdialogs: a tellask whose teammate had not answered before the fork point would
    have no reply there (every call site must have exactly one); the fork records one saying so."""
    served = await serve(RESPONSES)
    root_id = await _driven_root(served, ["first"])
    original = served.engine.get_dialog(root_id)
    # the state of a main dialog that a user message drove while its teammate still worked
    for record in [
        GenStartRecord(ts=now_iso(), genseq=2),
        AgentWordsRecord(ts=now_iso(), genseq=2, content="!?@coder build it\n"),
        TeammateCallResultRecord(ts=now_iso(), genseq=2, call_id="c-build", responder_id="coder",
                                 tellask_head="@coder build it\n", status="pending", result="dispatched"),
        SubdialogCreatedRecord(ts=now_iso(), genseq=2, call_id="c-build", call_type="C", subdialog_id="0sub-0001",
                               target_agent_id="coder", tellask_head="@coder build it\n", tellask_body=""),
        GenFinishRecord(ts=now_iso(), genseq=2),
        GenStartRecord(ts=now_iso(), genseq=3),
        HumanTextRecord(ts=now_iso(), genseq=3, msg_id="m-third", content="third"),
        AgentWordsRecord(ts=now_iso(), genseq=3, content="Third answer."),
        GenFinishRecord(ts=now_iso(), genseq=3),
    ]:
        original.append(record)
    status, forked = await served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 3})
    assert status == 201
    await served.engine.wait_idle()
    fork = served.engine.get_dialog(forked["rootId"])
    copied = fork.files.read_course(1)
    [reply] = [r for r in copied if isinstance(r, TeammateResponseRecord)]
    assert reply.call_id == "c-build" and reply.status == "failed" and root_id in reply.result
    assert _sayings(copied)[-1] == "Third answer.", "the fork ran generation 3 anew"
    assert not fork.pending and not list(fork.files.subdialog_files()), "no subdialog in the fork"
