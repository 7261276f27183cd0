"""Poison input never wedges a dialog: lone surrogates, model output that cannot be encoded, deep JSON (issue 15).

Bug: ``{"content": "hello \\ud800 world"}`` is valid JSON and got 202; writing it failed with
UnicodeEncodeError, which was not a storage error, so the dialog was rescheduled forever (a hot loop that
flooded the log and the panels) and later messages were never processed. A model reply with surrogate
halves lost the reply.
"""

from __future__ import annotations

import json

from server_kit import ServeFactory

from dominds.store.course_records import AgentWordsRecord, HumanTextRecord

ECHO = [
    {"agent": "lead", "message": "hello", "response": "Hi there."},
    {"agent": "lead", "message": "broken", "response": "half \ud83d a pair and a lone \udc00 low"},
    # A pair as two code units split across stream chunks (as SSE JSON escapes arrive): joined again.
    {"agent": "lead", "message": "split", "response": "emoji \ud83d\ude00 joined", "chunk_chars": 7},
]


def _course(served, root_id: str):  # type: ignore[no-untyped-def]
    return served.engine.get_dialog(root_id).files.read_course(1)


async def test_lone_surrogate_in_a_message_is_refused_and_the_dialog_goes_on(serve: ServeFactory) -> None:
    served = await serve(ECHO)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    status, refused = await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello \ud800 world"})
    assert status == 400 and "lone UTF-16 surrogate" in refused["error"] and "`content`" in refused["error"]
    status, _ = await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello", "msgId": "ok-1"})
    assert status == 202
    await served.engine.wait_idle()
    course = _course(served, root_id)
    assert [r.msg_id for r in course if isinstance(r, HumanTextRecord)] == ["ok-1"]
    assert [r.content for r in course if isinstance(r, AgentWordsRecord)] == ["Hi there."]
    root = served.engine.get_dialog(root_id)
    assert root.latest.run_state.kind == "idle" and not root.latest.needs_drive and not root.queue


async def test_lone_surrogate_over_the_websocket_gets_an_error_reply(serve: ServeFactory) -> None:
    served = await serve(ECHO)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    sock = await served.ws()
    frame = {"type": "drive_dlg_by_user_msg", "dialog": {"selfId": created["rootId"]}, "content": "a \udfff b"}
    await sock.ws.send_str(json.dumps(frame))
    error = await sock.wait_type("error")
    assert "lone UTF-16 surrogate" in error["message"]
    assert served.engine.get_dialog(created["rootId"]).queue.as_list() == []


async def test_model_output_with_surrogate_halves_is_kept_scrubbed(serve: ServeFactory) -> None:
    served = await serve(ECHO)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    for text in ("broken", "split", "hello"):
        status, _ = await served.post(f"/api/dialogs/{root_id}/messages", {"content": text})
        assert status == 202
        await served.engine.wait_idle()
    said = [r.content for r in _course(served, root_id) if isinstance(r, AgentWordsRecord)]
    assert said == ["half \ufffd a pair and a lone \ufffd low", "emoji \U0001f600 joined", "Hi there."]
    status, shown = await served.get(f"/api/dialogs/{root_id}")
    assert status == 200


async def test_deeply_nested_json_body_is_a_400_not_a_500(serve: ServeFactory) -> None:
    served = await serve(ECHO)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    body = '{"content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = await served.client.post(
        f"/api/dialogs/{created['rootId']}/messages", data=body, headers={**served.auth(), "Content-Type": "application/json"}
    )
    assert response.status == 400


QUESTION = [
    {"agent": "lead", "message": "ask", "response": "!?@human Which colour?\n"},
    {"agent": "lead", "message": "blue", "response": "Blue it is."},
    {"agent": "lead", "message": "hello", "response": "Hi there."},
]


async def test_answer_reusing_a_recorded_message_id_is_refused_and_the_question_stays(serve: ServeFactory) -> None:
    """Bug: a Q4H answer reusing a recorded msgId got 202, the question was removed and the answer was
    never recorded."""
    served = await serve(QUESTION)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "ask", "msgId": "m-1"})
    await served.engine.wait_idle()
    [question] = served.engine.q4h_state()
    status, refused = await served.post(
        f"/api/q4h/{question['id']}/answer", {"content": "blue", "msgId": "m-1"}
    )
    assert status == 409 and "already accepted" in refused["error"]
    assert [q["id"] for q in served.engine.q4h_state()] == [question["id"]], "the question is still pending"
    status, _ = await served.post(f"/api/q4h/{question['id']}/answer", {"content": "blue", "msgId": "a-1"})
    assert status == 202
    await served.engine.wait_idle()
    said = [r.content for r in _course(served, root_id) if isinstance(r, AgentWordsRecord)]
    assert said[-1] == "Blue it is."


async def test_duplicate_message_id_is_refused_after_the_transcript_cache_forgot_it(serve: ServeFactory) -> None:
    """Bug: a duplicate msgId was refused while the dialog was cached, but accepted and silently discarded
    once the transcript cache had evicted the dialog."""
    served = await serve(QUESTION)
    served.engine.transcript_cache_size = 1
    ids = []
    for _ in range(3):
        _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        ids.append(created["rootId"])
        await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "hello", "msgId": "same-id"})
        await served.engine.wait_idle()
    for root_id in ids:
        status, refused = await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello", "msgId": "same-id"})
        assert status == 409 and "already accepted" in refused["error"], root_id


async def test_a_100_mb_taskdoc_file_is_cut_and_never_stalls_the_daemon(serve: ServeFactory) -> None:
    """Bug: a 100 MB Taskdoc section file (get_taskdoc) blocked the whole daemon for ~20 s (/api/health timed
    out) and added ~600 MiB. Section files are now read up to 256 KiB, with a note saying they were cut."""
    served = await serve(ECHO)
    goals = served.engine.rtws.root / "tasks" / "t.tsk" / "goals.md"
    with goals.open("ab") as stream:
        stream.write(b"The goal.\n")
        stream.truncate(100 * 1024 * 1024)  # sparse: 100 MiB of NULs after the text
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    sock = await served.ws()
    taskdoc = await sock.request(
        {"type": "get_taskdoc", "dialog": {"selfId": created["rootId"]}}, "taskdoc_content", timeout=10
    )
    assert len(json.dumps(taskdoc)) < 4 * 1024 * 1024, "bounded (NULs are escaped six characters each)"
    assert "100.0 MiB" in json.dumps(taskdoc) and "cut" in json.dumps(taskdoc)
    status, health = await served.get("/api/health")
    assert status == 200 and health["ok"]
    status, _ = await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "hello"})
    assert status == 202
    await served.engine.wait_idle()
    said = [r.content for r in _course(served, created["rootId"]) if isinstance(r, AgentWordsRecord)]
    assert said == ["Hi there."]


async def test_corrupt_files_flag_their_dialog_in_the_listing(serve: ServeFactory) -> None:
    """Bug: corrupt course/q4h/subdlg files made a dialog refuse messages, but /api/dialogs listed it without
    an error."""
    served = await serve(ECHO)
    ids = []
    for _ in range(2):
        _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        ids.append(created["rootId"])
        await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "hello"})
    await served.engine.wait_idle()
    first, second = (served.engine.get_dialog(i) for i in ids)
    first.files.q4h_yaml.write_text("questions: [ {{ not yaml")
    course = second.files.course(1)
    lines = course.read_text().splitlines()
    course.write_text("\n".join([lines[0], "{broken json", *lines[1:]]) + "\n")
    served.engine.roots.pop(ids[1])  # as after a restart: the daemon reads the files again
    status, refused = await served.post(f"/api/dialogs/{ids[1]}/messages", {"content": "hello"})
    assert status == 409 and "course-001.jsonl" in refused["error"]
    listing = {d["rootId"]: d for d in (await served.get("/api/dialogs"))[1]["dialogs"]}
    assert "q4h.yaml" in listing[ids[0]]["error"] and listing[ids[0]]["runState"]["kind"] == "error"
    assert "course-001.jsonl:2" in listing[ids[1]]["error"] and listing[ids[1]]["runState"]["kind"] == "error"


async def test_memory_kept_does_not_grow_with_message_size(serve: ServeFactory) -> None:
    """Bug: memory kept grew with message size (300 × 900 KB messages: +266 MiB): the event replay buffer and
    the transcript cache held every huge message. Both are bounded by text size as well as by count."""
    served = await serve([{"agent": "lead", "contains": "x", "response": "ok"}])
    engine = served.engine
    engine.transcript_cache_chars = 2 * 1024 * 1024
    engine.pubchan._buffer_chars_cap = 2 * 1024 * 1024
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    for _ in range(12):
        status, _ = await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "x" * 900_000})
        assert status == 202
        await engine.wait_idle()
    assert engine.pubchan._buffer_chars <= 2 * 1024 * 1024 + 1_000_000
    assert sum(engine.scheduler.transcript_sizes.values()) <= 2 * 1024 * 1024
    root = engine.get_dialog(created["rootId"])
    assert root.transcript_chars() <= 2 * 1024 * 1024, "a transcript too big to cache is read from its file when needed"
    said = [r for n in root.files.course_numbers() for r in root.files.read_course(n) if isinstance(r, HumanTextRecord)]
    assert len([r for r in said if r.origin == "user"]) == 12, "nothing was lost"
