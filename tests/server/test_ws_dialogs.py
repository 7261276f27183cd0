"""Websocket protocol: creating, driving and watching dialogs (every dialog-level message type)."""

from __future__ import annotations

from typing import Any

from server_kit import ServeFactory, WsClient


async def _create(sock: WsClient, **extra: Any) -> dict[str, Any]:
    ready = await sock.request(
        {"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk", **extra}, "dialog_ready"
    )
    assert ready["mode"] == "replay" and ready["agentId"] == "lead" and ready["status"] == "run"
    return ready


async def test_create_drive_and_stream_a_reply(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    ready = await _create(sock)
    dialog = ready["dialog"]
    [created] = sock.seen("dialogs_created")  # published before the reply
    assert created["createdRootIds"] == [dialog["rootId"]] and "seq" in created and "dialog" not in created
    ack = await sock.request(
        {"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "hello", "msgId": "m1"}, "ack"
    )
    assert ack["msgId"] == "m1" and ack["requestType"] == "drive_dlg_by_user_msg"
    finish = await sock.wait_type("saying_finish_evt")
    assert finish["content"] == "Hello **there**! <script>alert(1)</script>"
    [html] = finish["markdownHtml"]
    assert "<strong>there</strong>" in html and "<script>" not in html and "&lt;script&gt;" in html
    idle = await sock.wait_for(lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "idle")
    assert idle["dialog"] == dialog
    events = sock.events_of(dialog["selfId"])
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)), "in order, no duplicates"
    types = [e["type"] for e in events]
    for expected in (
        "end_of_user_saying_evt",
        "generating_start_evt",
        "saying_start_evt",
        "markdown_chunk_evt",
        "generating_finish_evt",
    ):
        assert expected in types
    assert all(e["epoch"] == ready["epoch"] for e in events)


async def test_delegation_q4h_and_answer_resume_the_dialog(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    observer = await served.ws()  # follows nothing: still sees Q4H and run-state broadcasts
    dialog = (await _create(sock))["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "delegate"}, "ack")
    created = await sock.wait_type("subdialog_created_evt")
    assert (
        created["parentDialog"] == dialog
        and created["targetAgentId"] == "coder"
        and created["callType"] == "C"
    )
    call_finish = next(m for m in sock.received if m["type"] == "teammate_call_finish_evt")
    assert call_finish["callId"] == created["callId"]
    response = await sock.wait_type("teammate_response_evt")
    assert (
        response["calleeDialogId"] == created["subDialog"]["selfId"]
        and response["response"] == "Implemented X."
    )
    assert response["responseHtml"] == "<p>Implemented X.</p>\n"
    await sock.wait_for(lambda m: m["type"] == "saying_finish_evt" and m["content"] == "Thanks, X is done.")
    assert any(m["type"] == "subdialog_created_evt" for m in observer.received), "broadcast to every socket"
    assert not any(m["type"] == "saying_finish_evt" for m in observer.received), (
        "stream events only to followers"
    )

    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "paint"}, "ack")
    asked = await observer.wait_type("new_q4h_asked")
    question = asked["question"]
    assert question["tellaskHead"] == "@human Which colour?" and question["selfId"] == dialog["selfId"]
    count = await observer.wait_type("questions_count_update")
    assert count["questionCount"] == 1
    state = await observer.request({"type": "get_q4h_state"}, "q4h_state_response")
    assert [q["id"] for q in state["questions"]] == [question["id"]]
    await sock.wait_for(lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "blocked")

    ack = await observer.request(
        {
            "type": "drive_dialog_by_user_answer",
            "dialog": dialog,
            "questionId": question["id"],
            "content": "blue",
        },
        "ack",
    )
    assert ack["questionId"] == question["id"]
    assert len(observer.seen("q4h_answered", questionId=question["id"])) == 1
    await sock.wait_for(lambda m: m["type"] == "saying_finish_evt" and m["content"] == "Painting it blue.")
    again = await observer.request(
        {
            "type": "drive_dialog_by_user_answer",
            "dialog": dialog,
            "questionId": question["id"],
            "content": "red",
        },
        "error",
    )
    assert "not pending" in again["message"]


async def test_thinking_function_calls_and_reminders(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    dialog = (await _create(sock))["dialog"]
    await sock.request(
        {"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "think and tool"}, "ack"
    )
    chunk = await sock.wait_type("thinking_chunk_evt")
    assert chunk["chunk"] == "Let me think."
    call = await sock.wait_type("func_call_requested_evt")
    assert call["funcName"] == "add_reminder" and '"remember X"' in call["arguments"]
    reminders = await sock.wait_type("full_reminders_update")
    assert [r["content"] for r in reminders["reminders"]] == ["remember X"]
    result = await sock.wait_type("func_result_evt")
    assert (
        result["id"] == call["funcId"] and result["isError"] is False and "Reminder #1" in result["content"]
    )
    await sock.wait_for(lambda m: m["type"] == "saying_finish_evt" and m["content"] == "Reminder added.")
    direct = await sock.request({"type": "display_reminders", "dialog": dialog}, "full_reminders_update")
    assert [r["content"] for r in direct["reminders"]] == ["remember X"]


async def test_stop_resume_emergency_stop_and_resume_all(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    dialog = (await _create(sock))["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "slow"}, "ack")
    await sock.wait_type("markdown_chunk_evt")
    stop = await sock.request({"type": "interrupt_dialog", "dialog": dialog}, "ack")
    assert stop["stopped"] is True
    state = await sock.wait_for(
        lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "interrupted"
    )
    assert state["runState"]["reason"] == "user_stop"
    await sock.request({"type": "resume_dialog", "dialog": dialog}, "ack")
    await sock.wait_type("dlg_run_state_marker_evt", kind="resumed")
    emergency = await sock.request({"type": "emergency_stop"}, "ack")
    assert emergency["stopped"] == 1
    await sock.wait_for(
        lambda m: m["type"] == "dlg_run_state_evt" and m["runState"].get("reason") == "emergency_stop"
    )
    resumed = await sock.request({"type": "resume_all"}, "ack")
    assert resumed["resumed"] == 1
    await sock.request({"type": "interrupt_dialog", "dialog": dialog}, "ack")
    refused = await sock.request({"type": "resume_dialog", "dialog": {"selfId": dialog["selfId"]}})
    assert refused["type"] in ("ack", "error")  # interrupted again, or already settled: both are answers


async def test_declare_subdialog_dead_unblocks_the_caller(serve: ServeFactory) -> None:
    responses = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
        {"agent": "coder", "contains": "build it", "response": "!?@human Which database?\n"},
        {"agent": "lead", "contains": "declared dead", "response": "Coder is gone; I will do it myself."},
    ]
    served = await serve(responses)
    sock = await served.ws()
    dialog = (await _create(sock))["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "delegate"}, "ack")
    asked = await sock.wait_type("new_q4h_asked")
    sub = {"selfId": asked["question"]["selfId"], "rootId": dialog["rootId"]}
    refused = await sock.request({"type": "declare_subdialog_dead", "dialog": dialog}, "error")
    assert "only subdialogs" in refused["message"]
    await sock.request({"type": "declare_subdialog_dead", "dialog": sub, "note": "not needed"}, "ack")
    [response] = sock.seen("teammate_response_evt")  # supplied before the ack
    assert response["status"] == "failed" and response["calleeDialogId"] == sub["selfId"]
    await sock.wait_for(lambda m: m["type"] == "saying_finish_evt" and "myself" in m["content"])
    dead = await sock.request({"type": "display_dialog", "dialog": sub, "follow": "add"}, "dialog_ready")
    assert dead["runState"]["kind"] == "dead" and dead["assignmentFromSup"]["tellaskHead"].startswith(
        "@coder"
    )


async def test_stream_error_is_forwarded_and_the_dialog_is_interrupted(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    dialog = (await _create(sock))["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "fail"}, "ack")
    error = await sock.wait_type("stream_error_evt")
    assert "bad key" in error["error"] and error["dialog"] == dialog and error["genseq"] == 1
    state = await sock.wait_for(
        lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "interrupted"
    )
    assert state["runState"]["reason"] == "system_stop"
    snapshot = sock.seen("problems_snapshot")[-1]  # broadcast when the provider refused
    assert any("bad key" in p["message"] for p in snapshot["problems"]) and "seq" in snapshot


async def test_language_problems_taskdoc_and_live_taskdoc_refresh(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    dialog = (await _create(sock))["dialog"]
    assert (await sock.request({"type": "set_ui_language", "uiLanguage": "zh"}, "ui_language_set"))[
        "uiLanguage"
    ] == "zh"
    problems = await sock.request({"type": "get_problems"}, "problems_snapshot")
    assert problems["problems"] == []
    taskdoc = await sock.request({"type": "get_taskdoc", "dialog": dialog}, "taskdoc_content")
    goals = taskdoc["sections"][0]
    assert taskdoc["taskDocPath"] == "tasks/t.tsk" and goals["key"] == "goals" and "Ship the feature." in goals["html"]
    (served.engine.rtws.root / "tasks" / "t.tsk" / "progress.md").write_text("Half **done**.\n")
    pushed = await sock.wait_for(lambda m: m["type"] == "taskdoc_content" and "requestId" not in m)
    pushed_html = "".join(section["html"] for section in pushed["sections"])
    assert "<strong>done</strong>" in pushed_html and pushed["fingerprint"] != taskdoc["fingerprint"]
    unfollowed = await sock.request({"type": "unfollow_dialog", "dialog": dialog}, "ack")
    assert unfollowed["following"] == []
