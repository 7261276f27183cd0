"""``run_server``: next free port, the ``?auth=`` URL, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
from server_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.server.run import run_server


async def test_takes_the_next_free_port_and_shuts_down_gracefully(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws")
    engine = Engine(rtws)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy_port = taken.getsockname()[1]
        ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        server = asyncio.create_task(
            run_server(
                engine,
                "127.0.0.1",
                busy_port,
                token="tok",
                on_ready=ready.set_result,
                stop=stop,
                handle_signals=False,
            )
        )
        url = await asyncio.wait_for(ready, 5)
    port = int(url.split(":")[2].split("/")[0])
    assert port > busy_port and url == f"http://127.0.0.1:{port}/?auth=tok"

    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"ws://127.0.0.1:{port}/ws", protocols=("dominds", "dominds-auth.tok"))
        assert (await ws.receive_json())["type"] == "welcome"
        await ws.receive_json()  # problems_snapshot
        await ws.send_json({"type": "create_dialog", "taskDocPath": "tasks/t.tsk"})
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "slow")
        for _ in range(200):
            if root.streaming_text:
                break
            await asyncio.sleep(0.01)
        assert root.streaming_text, "the slow reply is streaming"
        stop.set()
        closed = None
        while closed is None:
            msg = await asyncio.wait_for(ws.receive(), 5)
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                closed = msg
        assert closed.type == aiohttp.WSMsgType.CLOSE and closed.data == 1001, "GOING_AWAY"
    await asyncio.wait_for(server, 10)
    assert engine.closed
    latest = root.files.read_latest()
    assert latest is not None and latest.run_state.kind == "interrupted" and not latest.generating
    with socket.socket() as probe:  # the listener is gone (closed connections may linger in TIME_WAIT)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        probe.listen()
