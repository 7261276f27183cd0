"""Cold start, listing, memory and ``dominds status`` on a big workspace (10,000 dialogs by default).

Writes ROOTS trees of 1 + SUBS dialogs (``bench/_bigworkspace.py``: a fifth of the trees blocked on a
question, so start-up has real pending work), then, ``--runs`` times each, as a user would:

- spawns the real ``dominds serve`` (fsync on) and times: until it prints its URL; until ``GET /`` of
  the panel answers; ``GET /api/dialogs?status=run&limit=50`` (the panel's first request) and then the
  whole ``GET /api/dialogs``, from spawn and on their own;
- the daemon's RSS after that listing, and again after a few idle seconds;
- the very first start separately (no dialog index yet: every dialog is read once to build it);
- ``dominds status --json`` (the 50 most recent trees: the default page) and ``status --json --all``
  (every tree) in a fresh process, with the derived index in place (the usual case), with their CPU
  seconds (less sensitive to a busy machine than the wall time); and ``--all`` with the index deleted
  (every file read).

    .venv/bin/python bench/bench_coldstart.py [--roots 2000] [--subs 4] [--runs 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bigworkspace import generate
from _common import Figure, child_env, machine, make_workspace, print_figures, rss_mib, serve

from dominds.rtws import Rtws


def _get(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=600) as response:
        body: bytes = response.read()
        return body


def _status(rtws: Rtws, *extra: str, cpu: list[float] | None = None) -> float:
    started = time.perf_counter()
    before = os.times()
    done = subprocess.run(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "status", "--json", *extra],
        capture_output=True,
        text=True,
        env=child_env(),
    )
    wall = time.perf_counter() - started
    after = os.times()
    if cpu is not None:
        cpu.append(after.children_user + after.children_system - before.children_user - before.children_system)
    if done.returncode != 0:
        raise SystemExit(f"dominds status failed: {done.stderr.strip()}")
    return wall


def _derived_files(rtws: Rtws) -> list[Path]:
    """Everything the daemon and the CLI keep as a rebuildable cache (deleted for the "no index" runs)."""
    return [p for p in (rtws.state_dir / "cache",) if p.exists()]


def _start_and_list(rtws: Rtws, idle_seconds: float) -> dict[str, float]:
    """One start of the real daemon: when it answers, its first listing, its memory after, and idle."""
    daemon = serve(rtws.root)
    try:
        out = {"ready": daemon.ready_at - daemon.spawned_at}
        _get(f"{daemon.base}/", "")
        out["port"] = time.perf_counter() - daemon.spawned_at
        started = time.perf_counter()
        _get(f"{daemon.base}/api/dialogs?status=run&limit=50", daemon.token)
        done = time.perf_counter()
        out.update(page=done - started, page_from_spawn=done - daemon.spawned_at)
        started = time.perf_counter()
        body = json.loads(_get(f"{daemon.base}/api/dialogs", daemon.token))
        done = time.perf_counter()
        out.update(listing=done - started, from_spawn=done - daemon.spawned_at, roots=len(body["dialogs"]))
        out["rss"] = rss_mib(daemon.pid)
        time.sleep(idle_seconds)
        out["rss_idle"] = rss_mib(daemon.pid)
        return out
    finally:
        daemon.stop()


def measure(rtws: Rtws, dialogs: int, runs: int, idle_seconds: float) -> list[Figure]:
    first = _start_and_list(rtws, idle_seconds)  # no index yet: every dialog is read once
    steady = [_start_and_list(rtws, idle_seconds) for _ in range(max(1, runs))]
    warm_cpu: list[float] = []
    warm = [_status(rtws, cpu=warm_cpu) for _ in range(max(3, runs))]
    every_cpu: list[float] = []
    every = [_status(rtws, "--all", cpu=every_cpu) for _ in range(max(3, runs))]
    cold = []
    for _ in range(max(3, runs)):
        for path in _derived_files(rtws):
            shutil.rmtree(path)
        cold.append(_status(rtws, "--all"))
    label = f"{dialogs:,} dialogs"

    def series(key: str) -> list[float]:
        return [r[key] for r in steady]

    return [
        Figure(f"{label}: serve spawned until it prints its URL", "s", series("ready")),
        Figure(f"{label}: serve spawned until the panel page answers", "s", series("port")),
        Figure(f"{label}: first GET /api/dialogs?status=run&limit=50 (the panel's), from spawn", "s", series("page_from_spawn")),
        Figure(f"{label}: first GET /api/dialogs?status=run&limit=50, the request alone", "s", series("page"), ("<=", 0.5)),
        Figure(f"{label}: then the whole GET /api/dialogs, from spawn", "s", series("from_spawn"), note=f"{steady[0]['roots']:,} trees listed"),
        Figure(f"{label}: then the whole GET /api/dialogs, the request alone", "s", series("listing")),
        Figure(f"{label}: daemon RSS after that listing", "MiB", series("rss"), ("<=", 60)),
        Figure(f"{label}: daemon RSS after {idle_seconds:g} s idle", "MiB", series("rss_idle"), ("<=", 60)),
        Figure(f"{label}: very first start (no index): spawn until the panel's first page is in", "s", [first["page_from_spawn"]]),
        Figure(
            f"{label}: very first start (no index): spawn until the listing is in", "s", [first["from_spawn"]],
            note="every dialog read once to build .dominds/cache/dialogs.sqlite",
        ),
        Figure(f"{label}: very first start (no index): RSS after its listing", "MiB", [first["rss_idle"]]),
        Figure(f"{label}: dominds status --json (the default page of 50 trees)", "s", warm, ("<=", 0.3 if dialogs <= 10_000 else 2.0)),
        Figure(f"{label}: dominds status --json, its CPU", "s", warm_cpu),
        Figure(f"{label}: dominds status --json --all (every tree)", "s", every),
        Figure(f"{label}: dominds status --json --all, its CPU", "s", every_cpu),
        Figure(f"{label}: dominds status --json --all, derived index deleted", "s", cold),
    ]


def run(roots: int, subs: int, runs: int, idle_seconds: float, keep: Path | None) -> list[Figure]:
    base = keep or Path(tempfile.mkdtemp(prefix="dominds-cold-"))
    rtws = make_workspace([{"response": "ok"}], base)
    try:
        if not any(rtws.run_dir.iterdir()):
            started = time.perf_counter()
            dialogs = generate(rtws, roots, subs, progress=True)
            print(f"wrote {dialogs:,} dialogs in {time.perf_counter() - started:.1f} s", flush=True)
        else:
            dialogs = roots * (1 + subs)
        return measure(rtws, dialogs, runs, idle_seconds)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--roots", type=int, default=2000)
    parser.add_argument("--subs", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=3.0, help="seconds idle before the second RSS reading")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="generate into DIR (reused when it has dialogs) and keep it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = run(args.roots, args.subs, args.runs, args.idle, args.keep)
    print_figures(f"Cold start on a big workspace, real `dominds serve`, fsync on — {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
