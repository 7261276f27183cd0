"""Websocket workloads against the real ``dominds serve`` (fsync on), scripted provider at zero latency.

1. per turn: 20 dialogs created and driven one turn each, sequentially, on one connection; a turn is
   timed from sending ``drive_dlg_by_user_msg`` to receiving the dialog's next settled
   ``dlg_run_state_evt`` (reply persisted and published by then);
2. 20 turns at once on 20 connections: the wall time of each round;
3. 100-way TYPE C fan-out: one message whose reply holds 100 ``!?@worker`` tellasks, until the root
   settles with the collected answer (100 subdialogs created, driven, supplied, the root revived);
4. one streaming reply followed by 50 clients: per event, how long after the first client the last one
   received it;
5. the daemon's RSS after all of that.

    .venv/bin/python bench/bench_ws.py [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Figure,
    cpu_seconds,
    machine,
    make_workspace,
    print_figures,
    rss_mib,
    serve,
    user_cpu_seconds,
)

RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "fanout", "response": "".join(f"!?@worker task {i}\n\n" for i in range(100))},
    {"agent": "worker", "contains": "task", "response": "ok"},
    {"agent": "lead", "contains": "provided response", "response": "all collected"},
    {"message": "stream", "response": "0123456789" * 200, "chunk_chars": 10, "delay_ms": 2},
    {"response": "Hello! This is a **scripted** reply.", "usage": {"input_tokens": 10, "output_tokens": 5}},
]
SETTLED = ("idle", "blocked", "interrupted", "error", "dead")


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

    async def request(self, message: dict[str, Any], request_id: str, timeout: float = 30) -> dict[str, Any]:
        reply = self.expect(lambda m: m.get("requestId") == request_id)
        await self.ws.send_str(json.dumps({**message, "requestId": request_id}))
        result = await asyncio.wait_for(reply, timeout)
        if result["type"] == "error":
            raise RuntimeError(result["message"])
        return result

    async def close(self) -> None:
        await self.ws.close()
        await self.reader


async def connect(session: aiohttp.ClientSession, base: str, token: str) -> Client:
    protocols = ("dominds", f"dominds-auth.{token}") if token else ("dominds",)
    ws = await session.ws_connect(f"{base}/ws", protocols=protocols, max_msg_size=0)
    return Client(ws)


async def create(client: Client, tag: str) -> dict[str, str]:
    ready = await client.request({"type": "create_dialog", "taskDocPath": "tasks/b.tsk", "follow": "add"}, f"c-{tag}")
    dialog: dict[str, str] = ready["dialog"]
    return dialog


async def turn(client: Client, dialog: dict[str, str], text: str = "hello", timeout: float = 30) -> float:
    """One user turn; seconds from send to the dialog's settled run state."""
    settled = client.expect(
        lambda m: m.get("type") == "dlg_run_state_evt"
        and m["dialog"]["selfId"] == dialog["selfId"]
        and m["runState"]["kind"] in SETTLED
        and not (m["runState"]["kind"] == "blocked" and text == "fanout")
    )
    started = time.perf_counter()
    await client.ws.send_str(json.dumps({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": text}))
    await asyncio.wait_for(settled, timeout)
    return time.perf_counter() - started


async def sequential(session: aiohttp.ClientSession, base: str, token: str, n: int) -> list[float]:
    client = await connect(session, base, token)
    turns = []
    for i in range(n):
        dialog = await create(client, f"s{i}-{time.monotonic_ns()}")
        turns.append(await turn(client, dialog))
    await client.close()
    return turns


async def concurrent(session: aiohttp.ClientSession, base: str, token: str, n: int) -> float:
    clients = [await connect(session, base, token) for _ in range(n)]
    dialogs = await asyncio.gather(*(create(c, f"k{i}-{time.monotonic_ns()}") for i, c in enumerate(clients)))
    started = time.perf_counter()
    await asyncio.gather(*(turn(c, d) for c, d in zip(clients, dialogs, strict=True)))
    wall = time.perf_counter() - started
    for client in clients:
        await client.close()
    return wall


async def fan_out_tellasks(session: aiohttp.ClientSession, base: str, token: str) -> float:
    client = await connect(session, base, token)
    dialog = await create(client, f"fan-{time.monotonic_ns()}")
    wall = await turn(client, dialog, "fanout", timeout=120)
    await client.close()
    return wall


async def stream_to_clients(session: aiohttp.ClientSession, base: str, token: str, n: int) -> list[float]:
    clients = [await connect(session, base, token) for _ in range(n)]
    dialog = await create(clients[0], f"st-{time.monotonic_ns()}")
    for i, client in enumerate(clients[1:]):
        await client.request({"type": "display_dialog", "dialog": dialog}, f"f{i}")
    received: dict[int, list[float]] = {}

    def record(message: dict[str, Any]) -> None:
        if message.get("type") == "markdown_chunk_evt" and message.get("dialog") == dialog:
            received.setdefault(int(message["seq"]), []).append(time.perf_counter())

    for client in clients:
        client.on_event = record
    done = [c.expect(lambda m: m.get("type") == "saying_finish_evt" and m.get("dialog") == dialog) for c in clients]
    await clients[0].ws.send_str(json.dumps({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "stream"}))
    await asyncio.wait_for(asyncio.gather(*done), 60)
    for client in clients:
        await client.close()
    return [(max(times) - min(times)) * 1000 for times in received.values() if len(times) == n]


async def run(base: str, token: str, rounds: int, pid: int | None) -> list[Figure]:
    async with aiohttp.ClientSession() as session:
        await sequential(session, base, token, 3)  # warm-up: first-use caches are not the subject
        seq: list[float] = []
        walls: list[float] = []
        fans: list[float] = []
        cpu: dict[str, list[float]] = {"seq": [], "conc": [], "fan": [], "fan_user": []}
        for _ in range(rounds):
            before = _cpu(pid)
            seq += await sequential(session, base, token, 20)
            cpu["seq"].append((_cpu(pid) - before) / 20 * 1000)
            before = _cpu(pid)
            walls.append(await concurrent(session, base, token, 20))
            cpu["conc"].append((_cpu(pid) - before) * 1000)
            before, user_before = _cpu(pid), _user_cpu(pid)
            fans.append(await fan_out_tellasks(session, base, token))
            cpu["fan"].append(_cpu(pid) - before)
            cpu["fan_user"].append(_user_cpu(pid) - user_before)
        spread = await stream_to_clients(session, base, token, 50)
    figures = [
        Figure("ws: one turn, 20 dialogs in turn on one connection", "ms", [v * 1000 for v in seq], ("<=", 4)),
        Figure("ws: 20 turns at once on 20 connections, wall", "ms", [v * 1000 for v in walls], ("<=", 70)),
        Figure("ws: 100-way TYPE C fan-out until the root settles", "s", fans, ("<=", 0.3)),
        Figure("ws: one stream to 50 clients, last receipt after the first, per event", "ms", spread),
    ]
    if pid is not None:
        figures[1:1] = [Figure("ws: daemon CPU per turn (create + turn), in turn", "ms", cpu["seq"])]
        figures[3:3] = [Figure("ws: daemon CPU for the 20 turns at once (creates excluded)", "ms", cpu["conc"])]
        figures[5:5] = [
            Figure("ws: daemon CPU for the 100-way fan-out", "s", cpu["fan"]),
            Figure("ws: ... of it user CPU (the rest: the kernel's file work)", "s", cpu["fan_user"]),
        ]
        figures.append(Figure("ws: daemon RSS after these workloads", "MiB", [rss_mib(pid)], ("<=", 60)))
    return figures


def _cpu(pid: int | None) -> float:
    return cpu_seconds(pid) if pid is not None else float("nan")


def _user_cpu(pid: int | None) -> float:
    return user_cpu_seconds(pid) if pid is not None else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    rtws = make_workspace(RESPONSES)
    daemon = serve(rtws.root)
    try:
        figures = asyncio.run(run(f"ws://{daemon.base.removeprefix('http://')}", daemon.token, args.rounds, daemon.pid))
    finally:
        daemon.stop()
        shutil.rmtree(rtws.root, ignore_errors=True)
    print_figures(f"Websocket, real `dominds serve`, fsync on — {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
