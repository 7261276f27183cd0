"""A long dialog on disk, made of the records a real drive wrote: drive a few turns, then copy them.

``grow_course`` repeats the generations of a driven course until it holds ``turns`` of them, each copy
renumbered (genseq, msgId, function call ids) so that every record stays unique, as a dialog driven that
long would have written it. Driving 3,000 turns through the engine would take minutes; the files are
what a display reads, so the display sees exactly what it would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from server_kit import Served, ServeFactory


def _renumbered(record: dict[str, Any], genseq: int, copy: int) -> dict[str, Any]:
    out = dict(record)
    out["genseq"] = genseq
    if "msgId" in out:
        out["msgId"] = f"{out['msgId']}-{copy}"
    if out["type"] in ("func_call_record", "func_result_record"):
        out["id"] = f"{out['id']}-{copy}"
    return out


def grow_course(course_file: Path, turns: int) -> list[str]:
    """Rewrite ``course_file`` to hold ``turns`` generations copied from its own; the function call ids
    of the copies, in order (a deep link needs one)."""
    lines = [json.loads(line) for line in course_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    head = [r for r in lines if "genseq" not in r]
    generations: dict[int, list[dict[str, Any]]] = {}
    for record in lines:
        if "genseq" in record:
            generations.setdefault(record["genseq"], []).append(record)
    template = [generations[g] for g in sorted(generations)]
    assert template, "drive at least one turn first"
    out = list(head)
    call_ids: list[str] = []
    for copy in range(turns):
        for record in template[copy % len(template)]:
            renumbered = _renumbered(record, copy + 1, copy)
            out.append(renumbered)
            if renumbered["type"] == "func_call_record":
                call_ids.append(renumbered["id"])
    text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in out)
    course_file.write_text(text, encoding="utf-8")
    return call_ids


async def served_long_dialog(serve: ServeFactory, turns: int) -> tuple[Served, dict[str, Any], list[str]]:
    """A dialog of ``turns`` generations on disk (grown from two driven turns: a reply, then thinking, a
    function call and its result), served by a fresh daemon; with the function call ids, in order."""
    first = await serve()
    sock = await first.ws()
    ready = await sock.request(
        {"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"
    )
    dialog: dict[str, Any] = ready["dialog"]
    for content in ("hello", "think and tool"):
        await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": content}, "ack")
        await sock.wait_for(
            lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "idle", timeout=20
        )
    course_file = first.engine.get_dialog(dialog["rootId"]).files.course(1)
    await sock.close()
    await first.engine.close()
    call_ids = grow_course(course_file, turns)
    return await serve(), dialog, call_ids
