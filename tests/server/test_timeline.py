"""A dialog tree's timeline over the API (issue 35, item 3): every generation of every dialog of the tree
with its start, end, provider time, status and usage, and every tool call and tellask, from the course
files."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from server_kit import ServeFactory

from dominds.store.course_records import GenFinishRecord, GenStartRecord

RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "delegate", "response": "Asking coder.\n!?@coder please implement X\n"},
    {"agent": "coder", "contains": "please implement X",
     "stream": [{"func_call": {"name": "add_reminder", "arguments": {"content": "X is mine"}}}]},
    {"agent": "coder", "role": "tool", "contains": "", "response": "Implemented X."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks, X is done."},
]


async def test_the_timeline_of_a_tree_has_every_generation_and_call(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "delegate"})
    await served.engine.wait_idle()

    status, timeline = await served.get(f"/api/dialogs/{root_id}/timeline")
    assert status == 200 and timeline["rootId"] == root_id and timeline["truncated"] is False
    by_agent = {d["agentId"]: d for d in timeline["dialogs"]}
    assert set(by_agent) == {"lead", "coder"}
    lead, coder = by_agent["lead"], by_agent["coder"]
    assert [g["genseq"] for g in lead["generations"]] == [1, 2] and [g["genseq"] for g in coder["generations"]] == [1, 2]
    assert coder["supdialogId"] == root_id
    root = served.engine.get_dialog(root_id)
    records = root.files.read_course(1)
    starts = [r for r in records if isinstance(r, GenStartRecord)]
    finishes = [r for r in records if isinstance(r, GenFinishRecord)]
    for gen, start, finish in zip(lead["generations"], starts, finishes, strict=True):
        assert gen["status"] == finish.status == "ok" and gen["provider"] == "scripted"
        assert gen["start"] == datetime.fromisoformat(start.ts).timestamp() * 1000, "the record's own time"
        assert gen["start"] <= gen["end"] and gen["durationMs"] == finish.duration_ms
        assert gen["usage"]["output"] == finish.usage.output_tokens  # type: ignore[union-attr]
    assert timeline["start"] == min(g["start"] for d in timeline["dialogs"] for g in d["generations"])
    [tellask] = lead["calls"]
    assert tellask["kind"] == "tellask" and tellask["name"] == "coder" and tellask["subdialogId"] == coder["selfId"]
    [tool] = coder["calls"]
    assert tool["kind"] == "tool" and tool["name"] == "add_reminder" and tool["end"] >= tool["start"]
    assert tool["isError"] is False


async def test_the_timeline_of_an_unknown_or_empty_dialog(serve: ServeFactory) -> None:
    served = await serve(RESPONSES)
    status, _ = await served.get("/api/dialogs/0nope-0000/timeline")
    assert status == 404
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    status, timeline = await served.get(f"/api/dialogs/{created['rootId']}/timeline")
    assert status == 200 and timeline["dialogs"] == [] and timeline["start"] is None
