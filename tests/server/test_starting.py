"""The daemon's first moments: connections made while it starts are answered by the full app, on the same
sockets (server/listen.py, ``run_server(sockets=...)``).

Bug (first): while starting, every request but ``/api/health`` was answered 503 (``Retry-After: 1``): a
client that waits for the port to accept, or for ``/api/health`` to answer 200, and then creates a dialog
got a 503 instead of the dialog. Bug (then): a second server (``server/starting.py``) answered the port
while the daemon loaded, ``/api/health`` with ``ready: false``, and relayed every other request byte by
byte: start-up looked done at the port long before the API served data. Now the sockets are bound first
and nothing answers them until the full app does: such requests wait in the kernel's accept queue and
get the full app's answer, bodies and websockets included."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import aiohttp
from server_kit import TOKEN, write_workspace

from dominds.driver.engine import Engine
from dominds.server.listen import bind_listeners, listening_port
from dominds.server.run import run_server


async def _raw_get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


async def test_requests_made_before_the_app_serves_are_answered_by_the_full_app_on_the_same_sockets(tmp_path: Path) -> None:
    sockets = bind_listeners("127.0.0.1", 0)
    port = listening_port(sockets)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    http = aiohttp.ClientSession()

    async def call(method: str, path: str, body: object = None) -> tuple[int, object]:
        async with http.request(method, f"http://127.0.0.1:{port}{path}", headers=auth, json=body) as response:
            return response.status, await response.json() if response.content_type == "application/json" else await response.text()

    async def ws_hello() -> object:
        async with http.ws_connect(f"http://127.0.0.1:{port}/ws", protocols=("dominds", f"dominds-auth.{TOKEN}")) as ws:
            return (await ws.receive_json(timeout=10))["type"]

    # made while the daemon loads: they wait in the kernel's accept queue, nothing answers them yet
    created = asyncio.create_task(call("POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk", "agentId": "lead"}))
    page = asyncio.create_task(call("GET", "/"))
    socket_hello = asyncio.create_task(ws_hello())
    waiting = asyncio.create_task(_raw_get(port, "/api/health"))

    engine = Engine(write_workspace(tmp_path / "ws"))
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    server = asyncio.create_task(
        run_server(engine, "127.0.0.1", 0, token=TOKEN, on_ready=ready.set_result, stop=stop, handle_signals=False, sockets=sockets)
    )
    assert await asyncio.wait_for(ready, 10) == f"http://127.0.0.1:{port}/?auth={TOKEN}", "the same port"
    status, headers, body = await asyncio.wait_for(waiting, 10)
    assert status == 200 and json.loads(body)["ready"] is True and "aiohttp" in headers["server"], "the full app answers"
    status, dialog = await asyncio.wait_for(created, 10)
    assert status == 201 and isinstance(dialog, dict), "the early request (with its body) reached the full app"
    status, html = await asyncio.wait_for(page, 10)
    assert status == 200 and "<html" in str(html).lower()
    assert await asyncio.wait_for(socket_hello, 10) == "welcome", "a websocket opened while starting works"
    async with http.get(f"http://127.0.0.1:{port}/api/dialogs", headers=auth) as response:
        listed = (await response.json())["dialogs"]
        assert response.status == 200 and [d["rootId"] for d in listed] == [dialog["rootId"]]
    await http.close()
    stop.set()
    await asyncio.wait_for(server, 10)
    with socket.socket() as probe:  # the listener is closed with the full app
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
