"""Start-up of the real ``dominds serve``: from spawning the process until its port answers.

Runs in a fresh ``dominds init`` workspace, as a user starts it. For each run: wall seconds from spawn
until ``GET /api/health`` answers, and the CPU seconds the daemon used by then (less sensitive to a
busy machine than the wall time). Also the CPU time of ``python -c pass`` and of ``import aiohttp``
as floors: no daemon written in Python starts faster than those.

    .venv/bin/python bench/bench_startup.py [--runs 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, child_env, cpu_seconds, machine, print_figures, serve


def _floor(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=child_env())
    return time.perf_counter() - started


def run(runs: int) -> list[Figure]:
    base = Path(tempfile.mkdtemp(prefix="dominds-startup-"))
    try:
        subprocess.run([sys.executable, "-m", "dominds", "-C", str(base), "init", "."], check=True, capture_output=True)
        walls, cpus = [], []
        serve(base).stop()  # warm-up: byte-code caches written, files in the page cache
        for _ in range(runs):
            daemon = serve(base)
            try:
                with urllib.request.urlopen(f"{daemon.base}/api/health", timeout=60) as response:
                    response.read()
                walls.append(time.perf_counter() - daemon.spawned_at)
                cpus.append(cpu_seconds(daemon.pid))
            finally:
                daemon.stop()
        python = [_floor("pass") for _ in range(runs)]
        aiohttp = [_floor("import aiohttp.web") for _ in range(runs)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return [
        Figure("start-up: dominds serve spawned until its port answers", "s", walls, ("<=", 0.3)),
        Figure("start-up: CPU the daemon used by then", "s", cpus),
        Figure("floor: python -c pass", "s", python),
        Figure("floor: python -c 'import aiohttp.web'", "s", aiohttp),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = run(args.runs)
    print_figures(f"Start-up of the real `dominds serve` — {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))


if __name__ == "__main__":
    main()
