"""The daemon's first moments: the port answers honestly while the engine loads, and no connection is lost
when the full app takes the sockets over (server/listen.py, server/starting.py, ``run_server(sockets=...)``).

Bug: while starting, every request but ``/api/health`` was answered 503 (``Retry-After: 1``): a client
that waits for the port to accept, or for ``/api/health`` to answer 200, and then creates a dialog got a
503 instead of the dialog. Now such requests wait and get the full app's answer."""

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
from dominds.server.starting import StartingServer


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


async def test_the_port_answers_while_starting_and_the_full_app_takes_over_the_same_sockets(tmp_path: Path) -> None:
    sockets = bind_listeners("127.0.0.1", 0)
    port = listening_port(sockets)
    starting = StartingServer(sockets, token_required=True)
    starting.start()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    http = aiohttp.ClientSession()
    async with http.get(f"http://127.0.0.1:{port}/api/health") as response:
        health = await response.json()
        assert response.status == 200 and health["ok"] is True and health["ready"] is False
        assert health["server"] == "dominds" and response.headers["Cache-Control"] == "no-store"

    async def call(method: str, path: str, body: object = None) -> tuple[int, object]:
        async with http.request(method, f"http://127.0.0.1:{port}{path}", headers=auth, json=body) as response:
            return response.status, await response.json() if response.content_type == "application/json" else await response.text()

    async def ws_hello() -> object:
        async with http.ws_connect(f"http://127.0.0.1:{port}/ws", protocols=("dominds", f"dominds-auth.{TOKEN}")) as ws:
            return (await ws.receive_json(timeout=10))["type"]

    # made while the engine loads: held, not refused
    created = asyncio.create_task(call("POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk", "agentId": "lead"}))
    page = asyncio.create_task(call("GET", "/"))
    socket_hello = asyncio.create_task(ws_hello())
    await asyncio.sleep(0.2)
    assert not (created.done() or page.done() or socket_hello.done()), "nothing is answered for the full app"

    # between the two apps nobody accepts: a connection made then waits in the kernel's queue
    await starting.stop()
    waiting = asyncio.create_task(_raw_get(port, "/api/health"))
    await asyncio.sleep(0.05)
    assert not waiting.done()

    engine = Engine(write_workspace(tmp_path / "ws"))
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    server = asyncio.create_task(
        run_server(engine, "127.0.0.1", 0, token=TOKEN, on_ready=ready.set_result, stop=stop, handle_signals=False, sockets=sockets)
    )
    assert await asyncio.wait_for(ready, 10) == f"http://127.0.0.1:{port}/?auth={TOKEN}", "the same port"
    status, _headers, body = await asyncio.wait_for(waiting, 10)
    assert status == 200 and json.loads(body)["ready"] is True, "the queued connection is answered by the full app"
    status, dialog = await asyncio.wait_for(created, 10)
    assert status == 201 and isinstance(dialog, dict), "the held request (with its body) reached the full app"
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


async def test_without_a_token_the_starting_app_answers_loopback_host_names_only() -> None:
    """The DNS-rebinding guard of the full app holds from the first moment too."""
    sockets = bind_listeners("127.0.0.1", 0)
    port = listening_port(sockets)
    starting = StartingServer(sockets, token_required=False)
    starting.start()
    try:
        assert (await _raw_get(port, "/api/health", host="evil.example"))[0] == 403
        status, headers, body = await _raw_get(port, "/api/health", host="localhost")
        assert status == 200 and json.loads(body)["ready"] is False and headers["cache-control"] == "no-store"
    finally:
        await starting.stop()
        for sock in sockets:
            sock.close()
