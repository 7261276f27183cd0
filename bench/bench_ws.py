"""End-to-end websocket bench against a daemon process on the scripted provider (zero latency).

Workloads (issue 5):
1. 20 dialogs created and driven one turn each, sequentially, on one connection;
2. the same 20 concurrently, on 20 connections;
3. publish-to-receive latency of a streaming dialog followed by 50 clients.
A turn is timed from sending ``drive_dlg_by_user_msg`` to receiving the dialog's next non-proceeding
``dlg_run_state_evt`` (the reply is persisted and published by then). Goals: per-turn median ≤ 5 ms,
20 concurrent ≤ 100 ms wall, daemon RSS ≤ 60 MiB.

    .venv/bin/python bench/bench_ws.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, percentile

HERE = Path(__file__).resolve().parent


def rss_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of a process in MiB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class Client:
    """One websocket; messages are routed to waiters by a predicate."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.waiters: list[tuple[Any, asyncio.Future[dict[str, Any]]]] = []
        self.on_event: Any = None
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            if self.on_event is not None:
                self.on_event(data)
            for waiter in list(self.waiters):
                predicate, future = waiter
                if not future.done() and predicate(data):
                    future.set_result(data)
                    self.waiters.remove(waiter)

    def expect(self, predicate: Any) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiters.append((predicate, future))
        return future

    async def request(self, message: dict[str, Any], request_id: str) -> dict[str, Any]:
        reply = self.expect(lambda m: m.get("requestId") == request_id)
        await self.ws.send_str(json.dumps({**message, "requestId": request_id}))
        result = await asyncio.wait_for(reply, 10)
        if result["type"] == "error":
            raise RuntimeError(result["message"])
        return result

    async def close(self) -> None:
        await self.ws.close()
        await self.reader


async def connect(session: aiohttp.ClientSession, base: str, token: str) -> Client:
    ws = await session.ws_connect(
        f"{base}/ws", protocols=("dominds", f"dominds-auth.{token}"), max_msg_size=0
    )
    client = Client(ws)
    await asyncio.sleep(0)
    return client


async def create(client: Client, tag: str) -> dict[str, str]:
    ready = await client.request(
        {"type": "create_dialog", "taskDocPath": "tasks/b.tsk", "follow": "add"}, f"c-{tag}"
    )
    return ready["dialog"]


async def turn(client: Client, dialog: dict[str, str], tag: str) -> float:
    """One user turn; seconds from send to the settled run state."""
    settled = client.expect(
        lambda m: (
            m.get("type") == "dlg_run_state_evt"
            and m["dialog"]["selfId"] == dialog["selfId"]
            and m["runState"]["kind"] not in ("proceeding", "stop_requested")
        )
    )
    started = time.perf_counter()
    await client.ws.send_str(
        json.dumps({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "hello", "requestId": tag})
    )
    await asyncio.wait_for(settled, 10)
    return time.perf_counter() - started


async def sequential(session: aiohttp.ClientSession, base: str, token: str, n: int) -> dict[str, Any]:
    client = await connect(session, base, token)
    creates, turns = [], []
    wall = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        dialog = await create(client, f"s{i}")
        creates.append(time.perf_counter() - t0)
        turns.append(await turn(client, dialog, f"st{i}"))
    wall = time.perf_counter() - wall
    await client.close()
    return {"creates": creates, "turns": turns, "wall": wall}


async def concurrent(session: aiohttp.ClientSession, base: str, token: str, n: int) -> dict[str, Any]:
    clients = [await connect(session, base, token) for _ in range(n)]
    dialogs = await asyncio.gather(*(create(c, f"k{i}") for i, c in enumerate(clients)))
    wall = time.perf_counter()
    turns = await asyncio.gather(
        *(turn(c, d, f"kt{i}") for i, (c, d) in enumerate(zip(clients, dialogs, strict=True)))
    )
    wall = time.perf_counter() - wall
    for client in clients:
        await client.close()
    return {"turns": list(turns), "wall": wall}


async def fan_out(session: aiohttp.ClientSession, base: str, token: str, n: int) -> dict[str, Any]:
    clients = [await connect(session, base, token) for _ in range(n)]
    dialog = await create(clients[0], "fan")
    for i, client in enumerate(clients[1:]):
        await client.request({"type": "display_dialog", "dialog": dialog}, f"f{i}")
    latencies: list[float] = []

    def record(message: dict[str, Any]) -> None:
        published = message.get("benchPublishedNs")
        if published and message.get("type") in ("markdown_chunk_evt", "saying_finish_evt"):
            latencies.append((time.time_ns() - published) / 1e6)

    for client in clients:
        client.on_event = record
    done = [
        c.expect(lambda m: m.get("type") == "saying_finish_evt" and m["dialog"] == dialog) for c in clients
    ]
    wall = time.perf_counter()
    await clients[0].ws.send_str(
        json.dumps({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "stream"})
    )
    await asyncio.wait_for(asyncio.gather(*done), 30)
    wall = time.perf_counter() - wall
    for client in clients:
        await client.close()
    return {"latencies": latencies, "wall": wall}


def row(name: str, values_ms: list[float], wall_s: float, goal: str) -> str:
    return (
        f"| {name:<44} | {len(values_ms):>6} | {statistics.median(values_ms):>8.2f} | {percentile(values_ms, 99):>8.2f} "
        f"| {wall_s * 1000:>9.1f} | {goal:<22} |"
    )


def figures(values_ms: list[float], wall_s: float) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(values_ms), 3),
        "p99_ms": round(percentile(values_ms, 99), 3),
        "wall_ms": round(wall_s * 1000, 1),
        "n": len(values_ms),
    }


async def run(base: str, token: str, rounds: int, pid: int | None) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        # a warm-up round: imports, first-use caches and the scripted database load are not the subject
        await sequential(session, base, token, 3)
        lines = [
            "| workload                                     |  count | median ms |   p99 ms |   wall ms | goal                   |",
            "|----------------------------------------------|-------:|----------:|---------:|----------:|------------------------|",
        ]
        all_seq: list[float] = []
        all_con: list[float] = []
        con_walls: list[float] = []
        seq_walls: list[float] = []
        for r in range(rounds):
            seq = await sequential(session, base, token, 20)
            con = await concurrent(session, base, token, 20)
            all_seq += [v * 1000 for v in seq["turns"]]
            all_con += [v * 1000 for v in con["turns"]]
            con_walls.append(con["wall"])
            seq_walls.append(seq["wall"])
            lines.append(
                row(
                    f"[{r + 1}] sequential: create_dialog (1 conn)",
                    [v * 1000 for v in seq["creates"]],
                    seq["wall"],
                    "",
                )
            )
            lines.append(
                row(
                    f"[{r + 1}] sequential: one turn each (1 conn)",
                    [v * 1000 for v in seq["turns"]],
                    seq["wall"],
                    "per-turn median ≤ 5 ms",
                )
            )
            lines.append(
                row(
                    f"[{r + 1}] concurrent: 20 turns on 20 conns",
                    [v * 1000 for v in con["turns"]],
                    con["wall"],
                    "wall ≤ 100 ms",
                )
            )
        fan = await fan_out(session, base, token, 50)
        lines.append(
            row("fan-out: 50 clients, publish→receive", fan["latencies"], fan["wall"], "(stream: 200 chunks)")
        )
        print("\n".join(lines))
        result: dict[str, Any] = {
            "ws_seq20_turn": figures(all_seq, statistics.median(seq_walls)),
            "ws_conc20_wall": {**figures(all_con, statistics.median(con_walls))},
            "ws_fanout50": figures(fan["latencies"], fan["wall"]),
        }
        if pid is not None:
            current, peak = rss_mib(pid)
            print(f"\ndaemon RSS: {current:.1f} MiB now, {peak:.1f} MiB peak (goal ≤ 60 MiB)")
            result["daemon_rss_mib"] = {"now": current, "peak": peak}
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--url", help="bench an already running daemon (its panel URL with ?auth=) instead")
    args = parser.parse_args()
    if args.url:
        parsed = urlparse(args.url)
        token = parse_qs(parsed.query).get("auth", [""])[0]
        result = asyncio.run(run(f"ws://{parsed.netloc}", token, args.rounds, None))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
        return 0
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    daemon = subprocess.Popen(
        [sys.executable, str(HERE / "_daemon.py")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=HERE.parent,
    )
    try:
        assert daemon.stdout is not None
        url = daemon.stdout.readline().strip()
        if not url:
            print("the bench daemon did not start", file=sys.stderr)
            return 1
        parsed = urlparse(url)
        token = parse_qs(parsed.query)["auth"][0]
        base = f"ws://{parsed.netloc}"
        print(f"daemon pid {daemon.pid} at {parsed.netloc}; {machine()}\n")
        result = asyncio.run(run(base, token, args.rounds, daemon.pid))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
    finally:
        daemon.terminate()
        daemon.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
