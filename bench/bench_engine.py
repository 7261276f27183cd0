"""In-process engine benchmarks on the scripted provider at zero latency (issue 3).

Workloads: 20 roots × 1 turn sequential; 20 roots × 1 turn concurrent; 1,000 roots × 5 turns;
one root message with 100 TYPE C tellasks. These figures have no goals of their own: the goals are
held on the real ``dominds serve`` (bench_ws.py); the engine alone shows what the transport adds.
Run: ``.venv/bin/python bench/bench_engine.py [--roots 1000] [--turns 5] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, machine, make_workspace, peak_rss_mib, print_figures, rss_mib

from dominds.dialog.model import Dialog
from dominds.driver.engine import Engine

RESPONSES = [
    {"agent": "lead", "message": "fanout", "response": "".join(f"!?@worker task {i}\n\n" for i in range(100))},
    {"agent": "worker", "contains": "task", "response": "ok"},
    {"agent": "lead", "contains": "provided response", "response": "all collected"},
    {"agent": "lead", "response": "pong"},
]


class TurnClock:
    """Per-turn latency: from accepting a message to the dialog's run state returning to idle."""

    def __init__(self, engine: Engine) -> None:
        self.started: dict[str, float] = {}
        self.latencies_ms: list[float] = []
        self.done: dict[str, asyncio.Event] = {}
        engine.pubchan.subscribe(self._on_event, wants_all=True)

    def start(self, dialog: Dialog) -> asyncio.Event:
        self.started[dialog.self_id] = time.perf_counter()
        event = self.done[dialog.self_id] = asyncio.Event()
        return event

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") != "dlg_run_state_evt" or event["runState"]["kind"] not in ("idle", "blocked"):
            return
        self_id = event["dialog"]["selfId"]
        started = self.started.pop(self_id, None)
        if started is not None:
            self.latencies_ms.append((time.perf_counter() - started) * 1000)
            self.done[self_id].set()


async def turn(engine: Engine, clock: TurnClock, dialog: Dialog, text: str = "ping") -> None:
    done = clock.start(dialog)
    engine.submit_user_message(dialog, text)
    await done.wait()


def _footprint(engine: Engine, root_ids: list[str]) -> int:
    """Bytes on disk per dialog after its turns (files only, rounded up to 4 KiB blocks)."""
    total = 0
    for root_id in root_ids:
        for path in engine.store.root_dir("run", root_id).rglob("*"):
            if path.is_file():
                total += -(-path.stat().st_size // 4096) * 4096
    return total // max(len(root_ids), 1)


async def run(roots_big: int, turns_big: int) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine()}
    rtws = make_workspace(RESPONSES)
    engine = Engine(rtws)
    await engine.start()
    clock = TurnClock(engine)
    try:
        dialogs = [engine.create_dialog("lead", "tasks/b.tsk") for _ in range(20)]
        await turn(engine, clock, dialogs[0])  # warm caches (config, scripted DB)
        clock.latencies_ms.clear()
        started = time.perf_counter()
        for dialog in dialogs:
            await turn(engine, clock, dialog)
        wall = time.perf_counter() - started
        results["seq20"] = {"samples": list(clock.latencies_ms), "wall_ms": round(wall * 1000, 1)}

        clock.latencies_ms.clear()
        started = time.perf_counter()
        await asyncio.gather(*(turn(engine, clock, d) for d in dialogs))
        wall = time.perf_counter() - started
        results["conc20"] = {"samples": list(clock.latencies_ms), "wall_ms": round(wall * 1000, 1)}

        big = [engine.create_dialog("lead", "tasks/b.tsk") for _ in range(roots_big)]
        clock.latencies_ms.clear()
        started = time.perf_counter()
        for _ in range(turns_big):
            await asyncio.gather(*(turn(engine, clock, d) for d in big))
        wall = time.perf_counter() - started
        gc.collect()
        results["big"] = {
            "samples": list(clock.latencies_ms),
            "roots": roots_big,
            "turns": turns_big,
            "wall_s": round(wall, 2),
            "turns_per_s": round(roots_big * turns_big / wall, 1),
            "rss_after_mib": rss_mib(),
            "disk_bytes_per_dialog": _footprint(engine, [d.root_id for d in big]),
        }

        root = engine.create_dialog("lead", "tasks/b.tsk")
        started = time.perf_counter()
        engine.submit_user_message(root, "fanout")
        await engine.wait_idle(timeout=120)
        wall = time.perf_counter() - started
        subs = len(engine.store.subdialog_ids("run", root.root_id))
        results["fanout100"] = {"subdialogs": subs, "settled_ms": round(wall * 1000, 1), "final": root.last_saying()}
        results["peak_rss_mib"] = peak_rss_mib()
    finally:
        await engine.close()
        shutil.rmtree(rtws.root, ignore_errors=True)
    return results


def figures(results: dict[str, Any]) -> list[Figure]:
    big = results["big"]
    return [
        Figure("engine (in-process): one turn, 20 roots in turn", "ms", results["seq20"]["samples"]),
        Figure("engine (in-process): 20 turns at once, wall", "ms", [results["conc20"]["wall_ms"]]),
        Figure(
            f"engine (in-process): {big['roots']:,} roots x {big['turns']} turns, per turn", "ms", big["samples"],
            note=f"{big['turns_per_s']} turns/s; per-turn latency under that burst is queueing",
        ),
        Figure("engine (in-process): RSS after that run", "MiB", [big["rss_after_mib"]]),
        Figure("engine (in-process): 100-way TYPE C fan-out settled", "s", [results["fanout100"]["settled_ms"] / 1000]),
        Figure(f"disk per dialog after {big['turns']} turns (4 KiB blocks)", "KiB", [big["disk_bytes_per_dialog"] / 1024]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--roots", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    results = asyncio.run(run(args.roots, args.turns))
    found = figures(results)
    print_figures(f"Engine in-process, scripted provider at zero latency, fsync on — {results['machine']}", found)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in found], indent=1))


if __name__ == "__main__":
    main()
