"""The engine's start on a big workspace: recovery going through every tree of ``run/`` (issue 31).

A workspace of ``--roots`` trees of 1 + ``--subs`` dialogs is written (``_bigworkspace.py``; every fifth
tree blocked on a question), one start settles it (the first start reads every dialog and loads the
blocked trees), then ``--runs`` starts are timed in this process: ``Engine.start()`` (the lock, the
index's refresh, recovery) and ``close()``, as ``dominds serve`` does before it serves. The time to
import the engine is not in it (``bench_startup.py`` has that).

    .venv/bin/python bench/bench_recovery.py                  # 2,000 trees of 5: 10,000 dialogs
    .venv/bin/python bench/bench_recovery.py --roots 20000    # 100,000 dialogs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bigworkspace import generate
from _common import Figure, machine, make_workspace, print_figures

from dominds.driver.engine import Engine
from dominds.rtws import Rtws


async def _start(rtws: Rtws) -> float:
    engine = Engine(rtws)
    started = time.perf_counter()
    await engine.start()
    took = time.perf_counter() - started
    await engine.close()
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--roots", type=int, default=2000)
    parser.add_argument("--subs", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dominds-bench-recovery-"))
    try:
        rtws = make_workspace([{"response": "ok"}], base / "ws")
        dialogs = generate(rtws, args.roots, args.subs, progress=True)
        first = asyncio.run(_start(rtws))
        print(f"first start (reads every dialog, settles the blocked trees): {first:.2f} s", flush=True)
        samples = [asyncio.run(_start(rtws)) for _ in range(args.runs)]
        figures = [
            Figure(
                f"engine start on {dialogs:,} dialogs, every tree settled (index in place)",
                "s",
                samples,
                note=f"the first start, which settled them: {first:.2f} s",
            )
        ]
        print_figures(f"Engine start on a big workspace — {machine()}", figures)
        if args.json:
            args.json.write_text(json.dumps([f.to_json() for f in figures]))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
