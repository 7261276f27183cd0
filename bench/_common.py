"""Shared helpers for the benches: a workspace on the scripted provider, the real ``dominds serve``,
figures (median and p90 of samples, against a goal) and the one table every bench prints.

A *figure* is one row of the table: a workload, its unit, the samples measured, and an optional goal
``(op, value)`` the median is held to. Every bench script writes its figures as JSON (``--json``) so
``bench/run_all.py`` can print them all in one table.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from dominds.rtws import Rtws

TEAM = """\
member_defaults: {provider: scripted, model: bench, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead}
  worker: {name: Worker}
"""
LLM = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models: {bench: {context_length: 200000}}
"""


def make_workspace(responses: list[dict[str, Any]], root: Path | None = None) -> Rtws:
    base = root or Path(tempfile.mkdtemp(prefix="dominds-bench-"))
    rtws = Rtws(base)
    (base / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM)
    rtws.llm_yaml.write_text(LLM)
    (base / ".minds" / "scripted" / "bench.yaml").write_text(yaml.safe_dump({"responses": responses}))
    (base / "tasks" / "b.tsk").mkdir(parents=True, exist_ok=True)
    rtws.ensure_layout()
    return rtws


# ---------------------------------------------------------------- figures


@dataclass
class Figure:
    """One table row: ``samples`` of a workload in ``unit``; ``goal`` is ``("<=", value)`` on the median."""

    workload: str
    unit: str
    samples: list[float]
    goal: tuple[str, float] | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def p90(self) -> float:
        return percentile(self.samples, 90)

    @property
    def met(self) -> bool | None:
        if self.goal is None or not self.samples:
            return None
        op, value = self.goal
        return self.median <= value if op == "<=" else self.median >= value

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(median=_round(self.median), p90=_round(self.p90), met=self.met)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Figure:
        goal = tuple(data["goal"]) if data.get("goal") else None
        return Figure(data["workload"], data["unit"], data["samples"], goal, data.get("note", ""), data.get("extra", {}))


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (the value below which ``pct`` % of the samples lie)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[min(len(ordered), int(rank)) - 1]


def _round(value: float) -> float:
    if value != value:
        return value
    return round(value, 3 if abs(value) < 100 else 1)


def _show(value: float) -> str:
    if value != value:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def print_figures(title: str, figures: list[Figure]) -> None:
    """The one table: workload, unit, median, p90, goal, met?, and for a time the median as a multiple of
    the no-op request floor measured in the same run (when the table has one: ``floor_figures``)."""
    floors = [f.median for f in figures if f.workload.startswith("floor: no-op HTTP request")]
    floor_ms = min(floors) if floors else None
    to_ms = {"ms": 1.0, "s": 1000.0}

    def multiple(f: Figure) -> str:
        if floor_ms is None or f.unit not in to_ms or f.workload.startswith("floor:") or f.median != f.median:
            return ""
        return f"{f.median * to_ms[f.unit] / floor_ms:,.1f}"

    rows = [
        (
            f.workload,
            f.unit,
            _show(f.median),
            _show(f.p90) if len(f.samples) > 1 else "-",
            f"{f.goal[0]} {_show(f.goal[1])}" if f.goal else "",
            {None: "", True: "yes", False: "NO"}[f.met],
            str(len(f.samples)),
            multiple(f),
        )
        for f in figures
    ]
    head = ("workload", "unit", "median", "p90", "goal", "met?", "n", "x floor")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    align = "<<>><<>>"

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if a == "<" else c.rjust(w) for c, w, a in zip(cells, widths, align, strict=True))

    print(f"\n{title}\n")
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    notes = [f"  {f.workload}: {f.note}" for f in figures if f.note]
    if notes:
        print("\nnotes:")
        print("\n".join(notes))


# ---------------------------------------------------------------- processes


def rss_mib(pid: int | None = None) -> float:
    """Current resident set size of a process (this one by default), in MiB."""
    with open(f"/proc/{pid or os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu_seconds(pid: int) -> float:
    """CPU seconds the live threads of a process have used, to the nanosecond (``/proc/PID/task/*/schedstat``):
    ``cpu_seconds`` counts 10 ms ticks, too coarse for a 4 ms turn. Threads that ended are not counted:
    use it for the difference over a short span (the daemon's worker threads live on)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def user_cpu_seconds(pid: int) -> float:
    """User CPU seconds alone (the kernel's share, file system work, varies with the disk's state)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def fsync_append_floor_ms(samples: int = 200) -> list[float]:
    """The floor of every durable write: appending one 200-byte line to a file and fsyncing it, in ms.

    Measured in the same run as the figures it stands beside, so a figure can be compared across machines
    and loads as a multiple of what this disk and this load allow (docs/performance.md)."""
    line = b"x" * 199 + b"\n"
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="dominds-floor-") as folder:
        fd = os.open(os.path.join(folder, "floor.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for _ in range(samples):
                started = time.perf_counter()
                os.write(fd, line)
                os.fsync(fd)
                times.append((time.perf_counter() - started) * 1000)
        finally:
            os.close(fd)
    return times


def noop_request_floor_ms(samples: int = 200) -> list[float]:
    """The floor of every request: a GET answered with nothing by the standard library's HTTP server on
    loopback (a new connection each time, as the benches' clients make), in ms."""
    import http.client
    import http.server

    class Nothing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Nothing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    times: list[float] = []
    try:
        for _ in range(samples):
            started = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
            conn.request("GET", "/")
            conn.getresponse().read()
            conn.close()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        server.shutdown()
        server.server_close()
    return times


def floor_figures(when: str) -> list[Figure]:
    """The two floors as table rows, with the load average at the time they were measured."""
    load = os.getloadavg()[0]
    return [
        Figure(f"floor: fsync'd 200-byte append ({when})", "ms", fsync_append_floor_ms(), note=f"load {load:.1f}"),
        Figure(f"floor: no-op HTTP request, new connection ({when})", "ms", noop_request_floor_ms(), note=f"load {load:.1f}"),
    ]


def machine() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}"


@dataclass
class Daemon:
    """A real ``dominds serve`` process (fsync on) and how to reach it."""

    proc: subprocess.Popen[str]
    url: str
    """The panel URL printed by serve (with ``?auth=`` when a token is used)."""
    spawned_at: float
    ready_at: float

    @property
    def base(self) -> str:
        parsed = urlparse(self.url)
        return f"http://{parsed.netloc}"

    @property
    def token(self) -> str:
        return parse_qs(urlparse(self.url).query).get("auth", [""])[0]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def cache_dir() -> Path:
    """Where the benches keep what they write outside the source tree (results, byte-code)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dominds" / "bench"


def child_env() -> dict[str, str]:
    """The environment of every process a bench starts: as a user runs ``dominds``.

    Every fsync on; byte-code cached as Python does by default (a session that sets
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module at each start), under the
    bench's cache directory rather than in the source tree."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPYCACHEPREFIX": str(cache_dir() / "pycache")}
    env.pop("DOMINDS_FSYNC", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def serve(workspace: Path, *extra: str, timeout: float = 300.0) -> Daemon:
    """Spawn ``dominds serve --port 0`` in ``workspace`` exactly as a user runs it; return once it printed its URL."""
    env = child_env()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(workspace), "serve", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        found = re.search(r"panel: (http://\S+)", line)
        if found:
            ready = time.perf_counter()
            # keep reading what it prints so a chatty daemon never blocks on a full pipe
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return Daemon(proc, found.group(1), started, ready)
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError(f"dominds serve did not start in {workspace}")
