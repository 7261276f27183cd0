"""Messages typed while a question is pending: visible, answered after the answer, cancellable (issue 18, item 4).

The bug: a message typed while a question was pending went into a hidden queue, was delivered *before*
the answer, and the agent replied twice (once to the message without its answer, once to the answer).
Now the answer is read first, the queued message is listed in the dialog's state and announced on the
websocket, and it can be taken back until a generation consumes it.
"""

from __future__ import annotations

from typing import Any

from server_kit import ServeFactory

from dominds.store.course_records import HumanTextRecord

RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "paint", "response": "!?@human Which colour?\n!?Red or blue.\n"},
    {"agent": "lead", "message": "two", "response": "!?@human Which colour?\n\nAnd:\n!?@human Which size?\n"},
    {"agent": "lead", "message": "blue", "response": "Painting it blue."},
    {"agent": "lead", "message": "large", "response": "Large it is."},
    {"agent": "lead", "message": "also make it shiny", "response": "Shiny too."},
]


async def _create(sock: Any) -> dict[str, Any]:
    ready = await sock.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready")
    return dict(ready["dialog"])


async def _ask(sock: Any, dialog: dict[str, Any], text: str, questions: int = 1) -> list[dict[str, Any]]:
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": text}, "ack")
    asked = [await sock.wait_type("new_q4h_asked") for _ in range(questions)]
    await sock.wait_for(lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "blocked")
    return [a["question"] for a in asked]


def _prompts(served: Any, self_id: str) -> list[tuple[str, str]]:
    dialog = served.engine.find_dialog(self_id)
    return [(r.origin, r.content) for r in dialog.files.read_course(1) if isinstance(r, HumanTextRecord)]


async def test_a_message_typed_while_a_question_is_open_is_shown_queued_and_read_after_the_answer(
    serve: ServeFactory,
) -> None:
    served = await serve(RESPONSES)
    sock = await served.ws()
    dialog = await _create(sock)
    (question,) = await _ask(sock, dialog, "paint")

    ack = await sock.request(
        {"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "also make it shiny", "msgId": "m-shiny"}, "ack"
    )
    assert ack["msgId"] == "m-shiny"
    [queued] = sock.seen("prompt_queued_evt", msgId="m-shiny")  # published before the ack
    assert queued["content"] == "also make it shiny" and queued["cancellable"] is True
    status, shown = await served.get(f"/api/dialogs/{dialog['selfId']}")
    assert status == 200 and [q["msgId"] for q in shown["queuedPrompts"]] == ["m-shiny"], "visible in the API"

    await sock.request(
        {"type": "drive_dialog_by_user_answer", "dialog": dialog, "questionId": question["id"], "content": "blue"},
        "ack",
    )
    await sock.wait_for(lambda m: m["type"] == "saying_finish_evt" and m["content"] == "Shiny too.")
    await served.engine.wait_idle()
    assert _prompts(served, dialog["selfId"]) == [
        ("user", "paint"),
        ("q4h_answer", "blue"),
        ("user", "also make it shiny"),
    ], "the answer is read first"
    sayings = [m["content"] for m in sock.seen("saying_finish_evt")]
    assert sayings[-2:] == ["Painting it blue.", "Shiny too."], "one reply to each, in that order"
    consumed = sock.seen("end_of_user_saying_evt", msgId="m-shiny")
    assert len(consumed) == 1, "the queued message leaves the queue when the agent reads it"
    status, shown = await served.get(f"/api/dialogs/{dialog['selfId']}")
    assert shown["queuedPrompts"] == []


async def test_a_queued_message_can_be_cancelled_and_is_never_sent(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    sock = await served.ws()
    dialog = await _create(sock)
    colour, size = await _ask(sock, dialog, "two", questions=2)

    await sock.request(
        {"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "also make it shiny", "msgId": "m-1"}, "ack"
    )
    response = await served.client.delete(f"/api/dialogs/{dialog['selfId']}/messages/m-1", headers=served.auth())
    assert response.status == 200 and (await response.json())["cancelled"] is True
    await sock.wait_type("queued_prompt_cancelled_evt", msgId="m-1")
    again = await served.client.delete(f"/api/dialogs/{dialog['selfId']}/messages/m-1", headers=served.auth())
    assert again.status == 409 and "not queued" in (await again.json())["error"]

    # an answer waiting for the other question is shown queued too, but it is not the user's to cancel
    await sock.request(
        {"type": "drive_dialog_by_user_answer", "dialog": dialog, "questionId": colour["id"], "content": "blue", "msgId": "a-1"},
        "ack",
    )
    [answer] = sock.seen("prompt_queued_evt", msgId="a-1")
    assert answer["origin"] == "q4h_answer" and answer["cancellable"] is False
    refused = await sock.request({"type": "cancel_queued_msg", "dialog": dialog, "msgId": "a-1"})
    assert refused["type"] == "error" and "not a message of yours" in refused["message"]

    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "also make it shiny", "msgId": "m-2"}, "ack")
    cancelled = await sock.request({"type": "cancel_queued_msg", "dialog": dialog, "msgId": "m-2"}, "ack")
    assert cancelled["msgId"] == "m-2"
    await sock.request(
        {"type": "drive_dialog_by_user_answer", "dialog": dialog, "questionId": size["id"], "content": "large"}, "ack"
    )
    await served.engine.wait_idle()
    prompts = _prompts(served, dialog["selfId"])
    assert ("user", "also make it shiny") not in prompts, "a cancelled message never reaches the agent"
    assert [origin for origin, _ in prompts] == ["user", "q4h_answer", "q4h_answer"]
    assert served.engine.find_dialog(dialog["selfId"]).queue.as_list() == []
    status, shown = await served.get(f"/api/dialogs/{dialog['selfId']}")
    assert shown["runState"]["kind"] == "idle" and shown["queuedPrompts"] == []
