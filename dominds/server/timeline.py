"""A dialog tree on a time axis: each dialog's generations and tool calls with their latencies (issue 35,
item 3). ``GET /api/dialogs/{rootId}/timeline``; the page is ``static/timeline.html``.

Read from the course files alone (every record has ``ts``): a generation spans its ``gen_start_record`` to
its ``gen_finish_record`` (``durationMs`` is the provider call's own time, ``status`` how it ended, its
usage and model); a function call spans its call record to its result; a tellask is a mark at the call
with the subdialog it went to. Read in a worker thread: a big tree is many files. The newest
``MAX_GENERATIONS`` generations of the tree are sent (``truncated`` says so), so a very long tree stays a
bounded answer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dominds.store.course_records import (
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    SubdialogCreatedRecord,
)
from dominds.store.dialog_store import DialogFiles, DialogStore
from dominds.store.errors import StoreError

MAX_GENERATIONS = 5000
"""The newest generations of a tree the timeline holds (each with its tool calls)."""


def _ms(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp() * 1000


def tree_timeline(store: DialogStore, root_id: str) -> dict[str, Any]:
    """``{rootId, dialogs[{selfId, agentId, supdialogId, generations[...], calls[...]}], start, end, truncated}``
    (times in ms since the epoch); ``DialogNotFoundError`` for an unknown root."""
    status = store.locate_root(root_id)
    dialogs = [_dialog_timeline(files) for files in store.iter_tree(status, root_id)]
    generations = sorted((g["start"] for d in dialogs for g in d["generations"]), reverse=True)
    truncated = len(generations) > MAX_GENERATIONS
    if truncated:
        cut = generations[MAX_GENERATIONS - 1]
        for dialog in dialogs:
            dialog["generations"] = [g for g in dialog["generations"] if g["start"] >= cut]
            dialog["calls"] = [c for c in dialog["calls"] if c["start"] >= cut]
    times = [t for d in dialogs for g in d["generations"] for t in (g["start"], g["end"])]
    return {
        "rootId": root_id,
        "status": status,
        "dialogs": [d for d in dialogs if d["generations"] or d["calls"]],
        "start": min(times, default=None),
        "end": max(times, default=None),
        "truncated": truncated,
    }


def _dialog_timeline(files: DialogFiles) -> dict[str, Any]:
    try:
        meta = files.read_meta()
        agent, sup = meta.agent_id, meta.supdialog_id
    except StoreError:
        agent, sup = "?", None
    generations: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for course in files.course_numbers():
        try:
            records = files.read_course(course)
        except StoreError:
            continue
        open_gen: dict[str, Any] | None = None
        open_calls: dict[str, dict[str, Any]] = {}
        for record in records:
            if isinstance(record, GenStartRecord):
                open_gen = {"course": course, "genseq": record.genseq, "start": _ms(record.ts), "end": _ms(record.ts),
                            "status": "open"}
                generations.append(open_gen)
            elif isinstance(record, GenFinishRecord) and open_gen is not None and open_gen["genseq"] == record.genseq:
                open_gen.update(end=_ms(record.ts), status=record.status, model=record.model, provider=record.provider,
                                durationMs=record.duration_ms, finishReason=record.finish_reason)
                if record.usage is not None and record.usage.available:
                    open_gen["usage"] = {"input": record.usage.input_tokens + record.usage.cache_read_tokens,
                                         "output": record.usage.output_tokens}
                open_gen = None
            elif isinstance(record, FuncCallRecord):
                call = {"kind": "tool", "name": record.name, "id": record.id, "course": course, "genseq": record.genseq,
                        "start": _ms(record.ts), "end": None, "isError": False}
                open_calls[record.id] = call
                calls.append(call)
            elif isinstance(record, FuncResultRecord) and record.id in open_calls:
                call = open_calls.pop(record.id)
                call.update(end=_ms(record.ts), isError=record.is_error or record.interrupted)
            elif isinstance(record, SubdialogCreatedRecord):
                calls.append({"kind": "tellask", "name": record.target_agent_id, "id": record.call_id, "course": course,
                              "genseq": record.genseq, "start": _ms(record.ts), "end": None,
                              "subdialogId": record.subdialog_id})
    return {"selfId": files.dir.name, "agentId": agent, "supdialogId": sup, "generations": generations, "calls": calls}
