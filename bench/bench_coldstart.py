"""Cold start with 10,000 dialogs on disk (issue 7).

Generates 2,000 root trees of 5 dialogs (a fifth of them blocked on a question, so recovery has
real work), then measures: time from spawning ``dominds serve`` until ``GET /api/dialogs`` answers,
the time of that first listing, the daemon's RSS after it, and the time of ``dominds status``.

    .venv/bin/python bench/bench_coldstart.py [--roots 2000] [--subs 4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table, rss_mib
from bench_status import generate

from dominds.rtws import Rtws


def _serve(rtws: Rtws) -> tuple[subprocess.Popen[str], float, str]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "serve", "--port", "0", "--no-auth"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if found:
            return proc, started, found.group(0)
    raise RuntimeError("daemon did not start")


def run(roots: int, subs: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="dominds-cold-"))
    rtws = Rtws(base / "ws")
    (rtws.root / ".minds").mkdir(parents=True)
    rtws.ensure_layout()
    try:
        dialogs = generate(rtws, roots, subs)
        proc, started, url = _serve(rtws)
        try:
            listing_started = time.perf_counter()
            with urllib.request.urlopen(f"{url}/api/dialogs", timeout=120) as response:
                body = json.loads(response.read())
            answered = time.perf_counter()
            rss = rss_mib(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        status_runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "dominds", "-C", str(rtws.root), "status", "--json"], capture_output=True, check=True)
            status_runs.append(time.perf_counter() - t0)
        return {
            "machine": machine(),
            "dialogs": dialogs,
            "serve_until_dialogs_answer_s": round(answered - started, 3),
            "first_listing_s": round(answered - listing_started, 3),
            "roots_listed": len(body["dialogs"]),
            "daemon_rss_mib": rss,
            "status_s_first": round(status_runs[0], 3),
            "status_s_warm": round(min(status_runs[1:]), 3),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--roots", type=int, default=2000)
    parser.add_argument("--subs", type=int, default=4)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    r = run(args.roots, args.subs)
    print_table(
        f"Cold start with {r['dialogs']} dialogs on disk, {r['machine']}",
        [
            ("serve → /api/dialogs answers", f"{r['serve_until_dialogs_answer_s']} s ({r['roots_listed']} roots listed)"),
            ("first /api/dialogs", f"{r['first_listing_s']} s"),
            ("daemon RSS after listing", f"{r['daemon_rss_mib']} MiB"),
            ("dominds status --json", f"{r['status_s_first']} s first, {r['status_s_warm']} s warm  (goal < 2 s)"),
        ],
    )
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
