"""Run every benchmark workload and print one table (issue 7); also write bench/results.json.

Each workload runs in its own process so figures (RSS above all) do not leak between them. With
``DOMINDS_PEER_URL`` set to another daemon's panel URL (``http://host:port/?auth=...``) speaking the
same websocket protocol, the websocket workload also runs against it, in a peer column.

    bin/bench            # everything (~2-3 minutes on 2 cores)
    bin/bench --quick    # smaller sizes, for a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine  # noqa: E402


def _run(script: str, *args: str) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        target = Path(out.name)
    started = time.perf_counter()
    print(f"== {script} {' '.join(args)}", flush=True)
    proc = subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(target)], cwd=HERE.parent)
    if proc.returncode != 0:
        return {"error": f"{script} exited {proc.returncode}"}
    try:
        result: dict[str, Any] = json.loads(target.read_text())
    finally:
        target.unlink(missing_ok=True)
    result["_seconds"] = round(time.perf_counter() - started, 1)
    return result


def _fmt(fig: dict[str, Any] | None, key: str = "median_ms") -> str:
    if not fig:
        return "-"
    return f"{fig.get(key, '-')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads (smoke run)")
    args = parser.parse_args()
    quick = args.quick
    results: dict[str, Any] = {"machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M:%S %z")}
    results["engine"] = _run("bench_engine.py", *(["--roots", "200", "--turns", "2"] if quick else []))
    results["websocket"] = _run("bench_ws.py", "--rounds", "1" if quick else "3")
    results["coldstart"] = _run("bench_coldstart.py", *(["--roots", "200"] if quick else []))
    peer = os.environ.get("DOMINDS_PEER_URL")
    if peer:
        results["peer_websocket"] = _run("bench_ws.py", "--url", peer, "--rounds", "1" if quick else "3")

    e, w, c = results["engine"], results["websocket"], results["coldstart"]
    p = results.get("peer_websocket") or {}
    big = e.get("big", {})
    rows = [
        ("engine: per turn, 20 roots sequential", _fmt(e.get("seq20")), _fmt(e.get("seq20"), "p99_ms"), "ms", "median <= 2 ms", "-"),
        ("engine: 20 roots x 1 turn concurrent (wall)", _fmt(e.get("conc20"), "wall_ms"), _fmt(e.get("conc20"), "p99_ms"), "ms", "<= 50 ms", "-"),
        (f"engine: {big.get('roots')} roots x {big.get('turns')} turns, per turn", _fmt(big), _fmt(big, "p99_ms"), "ms", f"{big.get('turns_per_s')} turns/s", "-"),
        ("engine: RSS after that run", str(big.get("rss_after_mib", "-")), "", "MiB", "<= 60 MiB", "-"),
        ("engine: 100-way TYPE C fan-out settled", str(e.get("fanout100", {}).get("settled_ms", "-")), "", "ms", "<= 500 ms", "-"),
        ("disk per dialog after 5 turns", str(big.get("disk_bytes_per_dialog", "-")), "", "bytes", "", "-"),
        ("ws: per turn, 20 sequential on 1 conn", _fmt(w.get("ws_seq20_turn")), _fmt(w.get("ws_seq20_turn"), "p99_ms"), "ms", "median <= 5 ms", _fmt(p.get("ws_seq20_turn"))),
        ("ws: 20 concurrent turns on 20 conns (wall)", _fmt(w.get("ws_conc20_wall"), "wall_ms"), _fmt(w.get("ws_conc20_wall"), "p99_ms"), "ms", "<= 100 ms", _fmt(p.get("ws_conc20_wall"), "wall_ms")),
        ("ws: event fan-out to 50 clients", _fmt(w.get("ws_fanout50")), _fmt(w.get("ws_fanout50"), "p99_ms"), "ms", "", _fmt(p.get("ws_fanout50"))),
        ("ws: daemon RSS after the workloads", str(w.get("daemon_rss_mib", {}).get("now", "-")), "", "MiB", "<= 60 MiB", "-"),
        (f"cold start, {c.get('dialogs')} dialogs: serve until /api/dialogs answers", str(c.get("serve_until_dialogs_answer_s", "-")), "", "s", "", "-"),
        ("cold start: first /api/dialogs", str(c.get("first_listing_s", "-")), "", "s", "", "-"),
        ("cold start: dominds status --json (first / warm)", f"{c.get('status_s_first', '-')} / {c.get('status_s_warm', '-')}", "", "s", "< 2 s", "-"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\nDominds benchmarks on {results['machine']} ({results['when']})\n")
    header = f"{'workload'.ljust(width)}  {'median':>12}  {'p99':>8}  unit   {'goal':<16}  peer"
    print(header)
    print("-" * len(header))
    for name, median, p99, unit, goal, peer_value in rows:
        print(f"{name.ljust(width)}  {median:>12}  {p99:>8}  {unit:<5}  {goal:<16}  {peer_value}")
    (HERE / "results.json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {HERE / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
