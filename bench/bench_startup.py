"""Start-up of the real ``dominds serve``: from spawning the process until its API answers with data.

Runs in a fresh ``dominds init`` workspace holding one dialog, as a user starts it, on a free port
chosen beforehand (so the bench can knock from the very first moment). For each run, from the spawn:

- *port answers*: the first complete HTTP answer to ``GET /api/health`` (``200`` with ``ok: true``; a
  refused or unanswered connection is retried every 5 ms). A TCP connect alone does not count: the
  daemon listens within milliseconds, and the kernel queues connections until the full app answers
  them (one server from the first byte: an answer with ``"ready": false`` is counted in the note);
- *ready* (the goal): the first ``200`` to an authorised ``GET /api/dialogs`` that lists the dialog —
  what a panel needs (asked every 20 ms);
- *URL printed*: when ``serve`` printed the panel URL (``.dialogs/daemon.json`` written);
- the CPU seconds the daemon used by the time the port answered and by the time it was ready (less
  sensitive to a busy machine than the wall times).

Also ``python -c pass`` and ``import aiohttp.web`` as floors: no daemon written in Python answers with
aiohttp sooner than the latter.

With ``--instructions N`` (needs ``perf``), N more spawns run under ``perf stat -e instructions:u`` and
are killed the moment the listing answers: the user-space instructions the daemon ran until then, a
figure the load of a shared machine does not move (docs/performance.md, "Start-up"). The warm-up
thread ``serve`` starts once it serves adds what it ran before the kill.

    .venv/bin/python bench/bench_startup.py [--runs 10] [--instructions 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, child_env, cpu_seconds, machine, print_figures, serve

POLL_SECONDS = 0.005
READY_POLL_SECONDS = 0.02
"""Knocks for readiness are sparser: each is a request the starting daemon answers with its CPU."""


def _floor(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=child_env())
    return time.perf_counter() - started


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answer(url: str, token: str | None = None) -> dict[str, object] | None:
    """The JSON body of a ``200`` answer to ``url``; ``None`` when refused, unanswered or not ``200``."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = json.load(response)
            return body if response.status == 200 and isinstance(body, dict) else None
    except (OSError, ValueError):  # refused, reset, an error status (HTTPError is an OSError)
        return None


def _knock(
    url: str, token: str | None, spawned_at: float, deadline: float, every: float = POLL_SECONDS, data: bool = False
) -> tuple[float, dict[str, object]]:
    while time.perf_counter() < deadline:
        body = _answer(url, token)
        if body is not None and (not data or body.get("dialogs")):
            return time.perf_counter() - spawned_at, body
        time.sleep(every)
    raise RuntimeError(f"{url} did not answer")


def one_start(workspace: Path, token: str) -> tuple[float, bool, float, float, float, float]:
    """(port answers, said ready?, ready, URL printed, CPU by the answer, CPU by ready) of one spawn."""
    port = _free_port()
    spawned_at = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(workspace), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=child_env(),
    )
    printed: list[float] = []

    def read_output() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "panel: http://" in line and not printed:
                printed.append(time.perf_counter() - spawned_at)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        deadline = spawned_at + 120
        base = f"http://127.0.0.1:{port}"
        answered, health = _knock(f"{base}/api/health", None, spawned_at, deadline)
        cpu_answered = cpu_seconds(proc.pid)
        ready, _ = _knock(f"{base}/api/dialogs", token, spawned_at, deadline, READY_POLL_SECONDS, data=True)
        cpu = cpu_seconds(proc.pid)
        while not printed and time.perf_counter() < deadline:
            time.sleep(POLL_SECONDS)
        return answered, bool(health.get("ready")), ready, printed[0], cpu_answered, cpu
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        reader.join(timeout=10)


def instructions_until_ready(workspace: Path, token: str) -> float:
    """Millions of user-space instructions ``serve`` ran until its listing answered (``perf stat``)."""
    port = _free_port()
    with tempfile.NamedTemporaryFile(prefix="dominds-perf-", suffix=".csv") as out:
        spawned_at = time.perf_counter()
        proc = subprocess.Popen(
            ["perf", "stat", "-x,", "-e", "instructions:u", "-o", out.name, "--"]
            + [sys.executable, "-m", "dominds", "-C", str(workspace), "serve", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=child_env(),
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _knock(f"{base}/api/dialogs", token, spawned_at, spawned_at + 120, READY_POLL_SECONDS, data=True)
            daemon = json.loads((workspace / ".dialogs" / "daemon.json").read_text())["pid"]
            os.kill(int(daemon), signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
        for line in Path(out.name).read_text().splitlines():
            if "instructions" in line:
                return int(line.split(",")[0]) / 1e6
    raise RuntimeError("perf stat printed no instruction count")


def run(runs: int, instruction_runs: int = 0) -> list[Figure]:
    base = Path(tempfile.mkdtemp(prefix="dominds-startup-"))
    try:
        subprocess.run([sys.executable, "-m", "dominds", "-C", str(base), "init", "."], check=True, capture_output=True)
        daemon = serve(base)  # warm-up: byte-code caches written, files in the page cache, the token created
        try:
            created = urllib.request.Request(
                f"{daemon.base}/api/dialogs",
                data=json.dumps({"agentId": "lead", "taskDocPath": "tasks/demo.tsk"}).encode(),
                headers={"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"},
                method="POST",
            )
            urllib.request.urlopen(created, timeout=60).close()  # the dialog the "ready" knock must see listed
        finally:
            daemon.stop()
        token = (base / ".dominds" / "auth-token").read_text().strip()
        answers, readies, urls, answer_cpus, cpus, said_ready = [], [], [], [], [], 0
        for _ in range(runs):
            answered, was_ready, ready, printed, answer_cpu, cpu = one_start(base, token)
            answers.append(answered)
            answer_cpus.append(answer_cpu)
            readies.append(ready)
            urls.append(printed)
            cpus.append(cpu)
            said_ready += was_ready
        instructions = [instructions_until_ready(base, token) for _ in range(instruction_runs)]
        python = [_floor("pass") for _ in range(runs)]
        aiohttp = [_floor("import aiohttp.web") for _ in range(runs)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return [
        Figure(
            "start-up: spawned until the port answers (GET /api/health 200)",
            "s",
            answers,
            note=f"a 'ready: false' answer in {runs - said_ready} of {runs} runs",
        ),
        Figure("start-up: CPU the daemon used until the port answered", "s", answer_cpus),
        Figure(
            "start-up: spawned until GET /api/dialogs answers 200 with data",
            "s",
            readies,
            ("<=", 0.3),
            note=f"{statistics.median(readies) / statistics.median(aiohttp):.2f}x the median of the aiohttp import floor",
        ),
        Figure("start-up: spawned until the panel URL is printed", "s", urls),
        Figure("start-up: CPU the daemon used until ready", "s", cpus),
        *([Figure("start-up: user-space instructions until the listing answered (perf stat)", "M", instructions)] if instructions else []),
        Figure("floor: python -c pass", "s", python),
        Figure("floor: python -c 'import aiohttp.web'", "s", aiohttp),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--instructions", type=int, default=0, metavar="N", help="N more starts under perf stat")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = run(args.runs, args.instructions)
    print_figures(f"Start-up of the real `dominds serve` — {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))


if __name__ == "__main__":
    main()
