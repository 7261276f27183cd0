"""Opening a long dialog: a 10,000-turn course on disk, shown by the real ``dominds serve`` (fsync on).

The course is grown from one driven turn (its records copied with new genseqs and msgIds, as a dialog
driven that long would have written them), then a fresh daemon serves it and a client opens it with
``display_dialog``: timed from sending it to receiving the last event of the first page (what a panel
paints first), several times on new connections; then the daemon's RSS. Before paging, this dialog
could not be shown at all (the whole replay, past 20,000 frames, closed the socket).

    .venv/bin/python bench/bench_long_display.py [--turns 10000] [--runs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, machine, make_workspace, print_figures, rss_mib, serve

RESPONSES: list[dict[str, Any]] = [{"response": "Hello! This is a **scripted** reply, with `code` and a list:\n\n- one\n- two\n"}]


async def _drive_one_turn(base: str, token: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as session, session.ws_connect(f"{base}/ws") as ws:
        await ws.send_json({"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/b.tsk", "requestId": "c"})
        dialog: dict[str, str] | None = None
        async for msg in ws:
            event = json.loads(msg.data)
            if event.get("type") == "dialog_ready" and dialog is None:
                dialog = event["dialog"]
                await ws.send_json({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "hello"})
            elif event.get("type") == "dlg_run_state_evt" and event["runState"]["kind"] == "idle":
                break
        assert dialog is not None
        return dialog


def _grow(course_file: Path, turns: int) -> int:
    records = [json.loads(line) for line in course_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    head = [r for r in records if "genseq" not in r]
    turn = [r for r in records if "genseq" in r]
    with course_file.open("w", encoding="utf-8") as out:
        for record in head:
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
        for n in range(turns):
            for record in turn:
                copy = {**record, "genseq": n + 1}
                if "msgId" in copy:
                    copy["msgId"] = f"{copy['msgId']}-{n}"
                out.write(json.dumps(copy, ensure_ascii=False, separators=(",", ":")) + "\n")
    return course_file.stat().st_size


async def _open(base: str, token: str, dialog: dict[str, str]) -> tuple[float, int, int]:
    """Seconds until the first page's last event, its event count, its bytes."""
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as session, session.ws_connect(f"{base}/ws", max_msg_size=0) as ws:
        async for msg in ws:
            if json.loads(msg.data).get("type") == "problems_snapshot":
                break
        started = time.perf_counter()
        await ws.send_json({"type": "display_dialog", "dialog": dialog, "requestId": "d"})
        remaining: int | None = None
        count = size = 0
        async for msg in ws:
            event = json.loads(msg.data)
            if event.get("type") == "dialog_ready":
                remaining = event["eventCount"]
            elif remaining is not None and event.get("replay"):
                count += 1
                size += len(msg.data)
                remaining -= 1
            if remaining == 0:
                return time.perf_counter() - started, count, size
        raise RuntimeError(f"the socket closed ({ws.close_code}) before the first page came")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rtws = make_workspace(RESPONSES)
    try:
        daemon = serve(rtws.root)
        try:
            dialog = asyncio.run(_drive_one_turn(daemon.base, daemon.token))
        finally:
            daemon.stop()
        course = rtws.root / ".dialogs" / "run" / dialog["rootId"] / "course-001.jsonl"
        course_bytes = _grow(course, args.turns)
        daemon = serve(rtws.root)
        try:
            opened = [asyncio.run(_open(daemon.base, daemon.token, dialog)) for _ in range(args.runs)]
            rss = rss_mib(daemon.pid)
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(rtws.root, ignore_errors=True)
    load = os.getloadavg()[0]
    note = f"{args.turns} turns, course file {course_bytes / 1e6:.1f} MB, first page {opened[0][1]} events / {opened[0][2] / 1024:.0f} KiB; load {load:.1f}"
    figures = [
        Figure(f"open a {args.turns}-turn dialog: first page", "s", [o[0] for o in opened], ("<=", 0.5), note),
        Figure(f"daemon RSS after opening it {args.runs}×", "MiB", [rss], None, f"load {load:.1f}"),
    ]
    print_figures(f"Long dialog display on {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
