"""Run every benchmark and print one table: workload, unit, median, p90, goal, met?

Each workload runs in its own process (figures, RSS above all, must not leak between them), every
daemon is the real ``dominds serve`` with every fsync on. The results are written as JSON outside the
source tree: ``--out FILE``, or ``$XDG_CACHE_HOME/dominds/bench/results-<time>.json`` (default
``~/.cache/dominds/bench/``). Goals are figures to read, not tests: a missed goal prints ``NO`` and
the exit status stays 0; a workload that fails to run exits 1.

    bin/bench                # everything: start-up, websocket, 10,000 and 100,000 dialogs (~10 min)
    bin/bench --quick        # smaller sizes, no 100,000-dialog workspace (a smoke run)
    bin/bench --out r.json   # where the JSON goes

Two floors are measured in the same run, before and after the workloads, and printed beside the figures:
an fsync'd 200-byte append and a no-op HTTP request on loopback. A figure measured on a busy machine is
compared with another run's through them (and through the load average each row notes), never bare.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import Figure, cache_dir, floor_figures, machine, print_figures  # noqa: E402


def default_out() -> Path:
    return cache_dir() / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"


def _run(script: str, *args: str) -> tuple[list[Figure], str | None]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        target = Path(out.name)
    print(f"== {script} {' '.join(args)}", flush=True)
    try:
        proc = subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(target)], cwd=HERE.parent)
        if proc.returncode != 0:
            return [], f"{script} {' '.join(args)} exited {proc.returncode}"
        return [Figure.from_json(item) for item in json.loads(target.read_text())], None
    finally:
        target.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads, no 100,000 dialogs (smoke run)")
    parser.add_argument("--out", type=Path, help="write the JSON results here (default: the user cache directory)")
    parser.add_argument("only", nargs="?", choices=["long"], help="run one workload alone: long (bench_long.py)")
    args = parser.parse_args()
    quick = args.quick
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    plan: list[tuple[str, ...]] = [
        ("bench_startup.py", "--runs", "3" if quick else "10"),
        ("bench_ws.py", "--rounds", "1" if quick else "5"),
        ("bench_long_display.py", "--turns", "2000" if quick else "10000", "--runs", "2" if quick else "5"),
        ("bench_loop_stalls.py", "--turns", "2000" if quick else "10000"),
        ("bench_memory.py", "--dialogs", "100" if quick else "200,1000"),
        ("bench_coldstart.py", "--roots", "200" if quick else "2000", "--runs", "1" if quick else "3"),
        ("bench_recovery.py", "--roots", "200" if quick else "2000", "--runs", "2" if quick else "5"),
        ("bench_engine.py", *(["--roots", "200", "--turns", "2"] if quick else [])),
        ("bench_yaml.py",),
    ]
    if not quick:
        plan.insert(3, ("bench_coldstart.py", "--roots", "20000", "--runs", "2"))
    if args.only == "long":
        plan = [("bench_long.py", *(["--turns", "500", "--flood", "1000", "--timed", "10"] if quick else []))]
    # The floors are measured before and after the workloads: a figure is read as a multiple of what this
    # machine's disk and loopback allowed in this very run, under this run's load.
    figures: list[Figure] = floor_figures("before")
    failures: list[str] = []
    for script, *script_args in plan:
        found, failure = _run(script, *script_args)
        figures += found
        if failure:
            failures.append(failure)
    figures += floor_figures("after")
    where = machine()
    print_figures(f"Dominds benchmarks on {where} ({started})", figures)
    out = args.out or default_out()
    out.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "machine": where,
        "when": started,
        "figures": [f.to_json() for f in figures],
        "failures": failures,
    }
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
