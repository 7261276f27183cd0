"""A flood of queued messages (issue 31): the daemon keeps answering, refuses past its limits, loses nothing.

The bug: every queued message rewrote ``latest.yaml``, which held the whole queue, so each message cost
more than the one before; 10,000 messages from one client stalled the daemon (``/api/health`` timed out
for 96 s, SIGTERM did not finish in 120 s). Now a message is one append to the dialog's queue log, and
a dialog (or a connection) with too many messages waiting refuses more, naming the limit. Also pinned:
the drive's runaway guard stopped a drive after 200 generations, so a 201st queued message was never read.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from server_kit import ServeFactory

from dominds.server import ws_handlers
from dominds.store.course_records import HumanTextRecord

RESPONSES: list[dict[str, Any]] = [{"agent": "lead", "contains": "flood", "response": "ok"}]
FLOOD = 400
"""Past the drive's runaway guard (200 generations in a row): queued messages reset it."""


def _recorded(served: Any, self_id: str) -> Counter[str]:
    dialog = served.engine.find_dialog(self_id)
    return Counter(r.msg_id for r in dialog.files.read_course(1) if isinstance(r, HumanTextRecord))


@pytest.mark.slow
async def test_a_flood_of_messages_keeps_health_answering_and_loses_none(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    sock = await served.ws()
    ready = await sock.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready")
    dialog = ready["dialog"]
    flooding = True
    health: list[int] = []

    async def poll_health() -> None:
        while flooding:
            status, _ = await served.get("/api/health")
            health.append(status)
            await asyncio.sleep(0)

    poller = asyncio.create_task(poll_health())
    for number in range(FLOOD):
        await sock.send(
            {
                "type": "drive_dlg_by_user_msg",
                "dialog": dialog,
                "content": f"flood {number}",
                "msgId": f"f{number}",
                "requestId": f"q{number}",
            }
        )
    acks = [await sock.wait_type("ack", timeout=120, requestId=f"q{number}") for number in range(FLOOD)]
    flooding = False
    await poller
    assert [a["msgId"] for a in acks] == [f"f{n}" for n in range(FLOOD)]
    assert health and set(health) == {200}, "health answered all along"
    assert len(health) >= 3, f"health answered {len(health)} times while {FLOOD} messages were acknowledged"

    await served.engine.wait_idle(timeout=600)
    recorded = _recorded(served, dialog["selfId"])
    assert {f"f{n}" for n in range(FLOOD)} <= set(recorded), "every acknowledged message was read"
    assert max(recorded.values()) == 1, "none was read twice"
    root = served.engine.find_dialog(dialog["selfId"])
    assert not root.queue and not root.files.queue_log.path.exists(), "the drained log is removed"


SLOW_FIRST: list[dict[str, Any]] = [
    {"agent": "lead", "message": "slow", "response": "done", "delay_ms": 3000},
    {"agent": "lead", "contains": "wait", "response": "ok"},
]
"""The first reply takes a while: messages sent meanwhile wait in the queue."""


async def test_a_dialog_with_too_many_messages_waiting_refuses_more_naming_the_limit(
    serve: ServeFactory,
) -> None:
    served = await serve(SLOW_FIRST)
    served.engine.max_queued_per_dialog = 3
    status, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    assert status == 201, created
    self_id = created["selfId"]
    assert (await served.post(f"/api/dialogs/{self_id}/messages", {"content": "slow"}))[0] == 202
    answers = [
        await served.post(f"/api/dialogs/{self_id}/messages", {"content": f"wait {n}"}) for n in range(4)
    ]
    assert [status for status, _ in answers] == [202, 202, 202, 429]
    assert "the limit per dialog is 3" in answers[3][1]["error"]

    sock = await served.ws()
    error = await sock.request(
        {
            "type": "drive_dlg_by_user_msg",
            "dialog": {"selfId": self_id, "rootId": self_id},
            "content": "wait more",
        }
    )
    assert error["type"] == "error" and "the limit per dialog is 3" in error["message"]
    await served.engine.wait_idle(timeout=60)
    accepted = {body["msgId"] for status, body in answers if status == 202}
    assert accepted <= set(_recorded(served, self_id)), "every accepted message was read"


async def test_a_connection_with_too_many_messages_waiting_refuses_more(
    serve: ServeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ws_handlers, "MAX_QUEUED_PER_CONNECTION", 2)
    served = await serve(SLOW_FIRST)
    sock = await served.ws()
    dialog = (await sock.request({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"))[
        "dialog"
    ]
    status, _ = await served.post(f"/api/dialogs/{dialog['selfId']}/messages", {"content": "slow"})
    assert status == 202
    replies = [
        await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": f"wait {n}"})
        for n in range(3)
    ]
    assert [r["type"] for r in replies[:2]] == ["ack", "ack"]
    assert replies[2]["type"] == "error" and "the limit per connection is 2" in replies[2]["message"]
    await served.engine.wait_idle(timeout=60)
    again = await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "wait again"})
    assert again["type"] == "ack", "messages read since no longer count"
