"""Where a turn of a long dialog spends what a turn of a short one does not (issue 31).

The per-turn figure of ``bench_long.py`` says how much a turn at turn N costs more than one at turn 10;
this says where. A dialog of ``--turns`` turns is built on disk (``bench_long.build_dialogs``) beside one
of 10, the engine starts on both in this process (scripted provider, fsync on), and ``--timed`` turns of
each are driven in turn. Each step of a turn that can depend on the conversation's length is timed by a
wrapper around it (wall time inside the step, so a step the machine pre-empted looks longer: read the
figures on a quiet machine, or compare the two dialogs of one run); the turn's CPU is the process's.

    .venv/bin/python bench/bench_turn_parts.py [--turns 5000] [--timed 60]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from bench_engine import TurnClock, turn
from bench_long import build_dialogs, workspace

import dominds.driver.generation as generation
import dominds.llm.neutral_body as neutral_body
import dominds.store.request_log as request_log
from dominds.driver.engine import Engine

Spent = collections.Counter[str]


def timed(owner: Any, name: str, label: str, spent: Spent) -> Callable[[], None]:
    """Wrap ``owner.name`` to add its wall time to ``spent[label]``; returns the undo."""
    real = getattr(owner, name)

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, real)


STEPS = [
    (generation, "build_messages", "context messages (driver/context.py build_messages)"),
    (generation, "system_prompt", "system prompt"),
    (generation, "_with_images", "image placeholders"),
    (neutral_body.NeutralBodies, "build", "scripted request body (llm/neutral_body.py)"),
    (neutral_body.NeutralBodies, "_message_parts", "  … its messages' JSON reused (what is shared, said)"),
    (neutral_body._Kept, "joined", "  … the body joined (_Kept.joined)"),
    (request_log.RequestLog, "append", "request log append (store/request_log.py)"),
    (request_log, "_common_prefix", "  … common prefix with the previous body"),
    (request_log, "split_body", "  … the new part cut into chunks"),
]


async def run(turns: int, timed_turns: int) -> None:
    rtws = workspace()
    try:
        short_ids, long_ids = await build_dialogs(rtws, (10, turns))
        engine = Engine(rtws)
        await engine.start()
        clock = TurnClock(engine)
        dialogs = {
            name: engine.get_dialog(ids["rootId"], ids["selfId"]) for name, ids in (("turn 10", short_ids), (f"turn {turns}", long_ids))
        }
        for dialog in dialogs.values():
            await turn(engine, clock, dialog)  # warm: caches of this course, the scripted database
        spent: Spent = collections.Counter()
        undo = [timed(owner, name, label, spent) for owner, name, label in STEPS]
        totals = {name: collections.Counter[str]() for name in dialogs}
        cpu: dict[str, list[float]] = {name: [] for name in dialogs}
        try:
            for _ in range(timed_turns):
                for name, dialog in dialogs.items():  # in turn, as a daemon drives two dialogs
                    spent.clear()
                    started = time.process_time()
                    await turn(engine, clock, dialog)
                    cpu[name].append(time.process_time() - started)
                    totals[name].update(spent)
        finally:
            for each in undo:
                each()
        await engine.close()
    finally:
        shutil.rmtree(rtws.root, ignore_errors=True)
    short, long = dialogs
    print(f"{machine()}; {timed_turns} turns of each dialog, in turn")
    print(f"{'CPU per turn (median)':52s} {statistics.median(cpu[short]) * 1000:8.2f} {statistics.median(cpu[long]) * 1000:8.2f} ms")
    print(f"{'step (mean wall time per turn)':52s} {short:>8s} {long:>8s}    more")
    for _, _, label in STEPS:
        a, b = (totals[name][label] / timed_turns * 1000 for name in (short, long))
        print(f"{label:52s} {a:8.3f} {b:8.3f} {b - a:+8.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--timed", type=int, default=60)
    args = parser.parse_args()
    asyncio.run(run(args.turns, args.timed))


if __name__ == "__main__":
    main()
