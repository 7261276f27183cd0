"""How long the real ``dominds serve`` stops answering while it works on a long dialog (issue 31).

Every request, websocket and drive of the daemon shares one event loop: whatever holds it holds them
all. A dialog of ``--turns`` turns is built on disk (``bench_long.build_dialogs``: real records, an
11 MB course at 10,000 turns) beside a short one; a fresh daemon then does, one after another, what a
person does with it: open it (``GET /api/dialogs/{id}``, as the panel's first page), open it again,
its timeline, its usage, its hierarchy, a fork at its middle, marking it done, opening it in
``done/``, and reviving it (back to ``run/``). During each, ``GET /api/health`` is asked every 5 ms; the figure is its longest wait (the
goal: at most 100 ms, as under a flood of messages), beside the time the operation itself took.

    .venv/bin/python bench/bench_loop_stalls.py [--turns 10000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, machine, print_figures, serve
from bench_long import build_dialogs, workspace

HEALTH_EVERY = 0.005


async def _health_waits(session: aiohttp.ClientSession, base: str, stop: asyncio.Event, waits: list[float]) -> None:
    while not stop.is_set():
        asked = time.perf_counter()
        async with session.get(f"{base}/api/health") as answer:
            await answer.read()
        waits.append(time.perf_counter() - asked)
        await asyncio.sleep(HEALTH_EVERY)


async def _during(session: aiohttp.ClientSession, base: str, operation: Callable[[], Awaitable[int]]) -> tuple[float, float, int]:
    """(seconds the operation took, the longest health wait meanwhile, its HTTP status)."""
    stop, waits = asyncio.Event(), []
    prober = asyncio.create_task(_health_waits(session, base, stop, waits))
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    status = await operation()
    took = time.perf_counter() - started
    await asyncio.sleep(0.05)
    stop.set()
    await prober
    return took, max(waits), status


async def run(turns: int) -> list[Figure]:
    rtws = workspace()
    _, long = await build_dialogs(rtws, (10, turns))
    daemon = serve(rtws.root)
    figures: list[Figure] = []
    try:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {daemon.token}"}) as session:

            def get(path: str) -> Callable[[], Awaitable[int]]:
                async def call() -> int:
                    async with session.get(f"{daemon.base}{path}") as answer:
                        await answer.read()
                        return answer.status

                return call

            def post(path: str, body: dict[str, Any]) -> Callable[[], Awaitable[int]]:
                async def call() -> int:
                    async with session.post(f"{daemon.base}{path}", json=body) as answer:
                        await answer.read()
                        return answer.status

                return call

            self_id, root_id = long["selfId"], long["rootId"]
            steps = [
                ("open it (first GET /api/dialogs/{id})", get(f"/api/dialogs/{self_id}")),
                ("open it again", get(f"/api/dialogs/{self_id}")),
                ("its timeline", get(f"/api/dialogs/{root_id}/timeline")),
                ("its usage", get(f"/api/dialogs/{root_id}/usage")),
                ("its hierarchy", get(f"/api/dialogs/{root_id}/hierarchy")),
                (f"fork it at generation {turns // 2}", post(f"/api/dialogs/{self_id}/fork", {"genseq": turns // 2})),
                ("mark it done", post("/api/dialogs/move", {"rootId": root_id, "toStatus": "done"})),
                ("open it in done/", get(f"/api/dialogs/{self_id}?rootId={root_id}")),
                ("revive it (back to run/)", post("/api/dialogs/move", {"rootId": root_id, "toStatus": "run"})),
            ]
            load = f"{turns:,}-turn dialog; load {os.getloadavg()[0]:.1f}"
            for label, operation in steps:
                took, longest, status = await _during(session, daemon.base, operation)
                if status >= 300:
                    raise SystemExit(f"{label}: HTTP {status}")
                figures.append(Figure(f"{label}: the request", "ms", [took * 1000], note=load))
                figures.append(Figure(f"{label}: /api/health's longest wait", "ms", [longest * 1000], ("<=", 100.0), note=load))
    finally:
        daemon.stop()
        shutil.rmtree(rtws.root, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = asyncio.run(run(args.turns))
    print_figures(f"The daemon's loop while it works on a long dialog, real `dominds serve` — {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))


if __name__ == "__main__":
    main()
