"""The websocket endpoint ``/ws``: Origin and token checks, then one message loop per connection.

Bad input is answered, never fatal (DESIGN §4.7): invalid JSON, an unknown type, missing or
mistyped fields, a frame over ``MAX_FRAME_BYTES``, an unknown dialog, a refused request — each gets
an ``error`` reply and the loop goes on. Only frames above the transport limit (16 MiB, where
reading further would cost real memory) end the connection, with close code 1009.

The messages' models and their handlers (``messages.py``, ``ws_handlers.py``) are not imported with the
app: the listing a user waits for at start-up needs neither. ``dominds serve`` imports them in its
warm-up thread once it serves; a connection that comes first waits for that import in a worker thread,
never on the event loop.
"""

from __future__ import annotations

import asyncio
import importlib
import logging

from aiohttp import WSMsgType, web

from dominds.driver.engine import EngineError
from dominds.server import keys
from dominds.server.auth import choose_subprotocol, offered_subprotocols, origin_allowed, websocket_authorized
from dominds.server.hub import Connection
from dominds.store.errors import StoreError
from dominds.taskdoc import TaskdocError

log = logging.getLogger("dominds.server")

TRANSPORT_MAX_FRAME = 16 * 1024 * 1024
"""aiohttp's own limit: above it the frame is not even read and the socket closes with 1009."""
CLOSE_UNAUTHORIZED = 4401
HEARTBEAT_SECONDS = 30.0
HANDLERS_MODULE = "dominds.server.ws_handlers"
"""Imports ``messages.py`` with it: loaded at the first connection or by the daemon's warm-up."""
_handlers_imported = False
"""Set once an import in a worker thread returned: the module is in ``sys.modules`` from the moment its
import starts (in the warm-up thread, say), and importing from it on the loop before that import ends
would wait for it there."""


async def websocket_handler(request: web.Request) -> web.StreamResponse:
    settings = request.app[keys.SETTINGS]
    hub = request.app[keys.HUB]
    if not origin_allowed(request, settings.allowed_origins):
        # refused before the upgrade: a foreign page gets nothing, not even a close code
        raise web.HTTPForbidden(text='{"error": "forbidden origin"}', content_type="application/json")
    offered = offered_subprotocols(request)
    chosen = choose_subprotocol(offered)
    # Before the handshake: between it and ``hub.add`` nothing may wait, or what is published meanwhile
    # (a run the client starts as soon as it is connected) never reaches the connection. The first
    # connection's import of the handlers waited there, and the first events of a ToT run were lost.
    global _handlers_imported
    if not _handlers_imported:
        await asyncio.to_thread(importlib.import_module, HANDLERS_MODULE)
        _handlers_imported = True
    from dominds.server.ws_handlers import problems_snapshot, welcome

    ws = web.WebSocketResponse(
        protocols=(chosen,) if chosen else (), max_msg_size=TRANSPORT_MAX_FRAME, heartbeat=HEARTBEAT_SECONDS
    )
    await ws.prepare(request)
    if settings.token is not None and not websocket_authorized(request, settings.token, offered):
        # a browser cannot read an HTTP 401 on an upgrade, so the refusal is a close code
        await ws.close(code=CLOSE_UNAUTHORIZED, message=b"unauthorized")
        return ws

    conn = Connection(hub, ws)
    hub.add(conn)
    conn.send_first(welcome(hub.engine))
    conn.send_first(problems_snapshot(hub.engine))
    try:
        async for frame in ws:
            if frame.type == WSMsgType.TEXT:
                await handle_frame(conn, frame.data)
                # Frames already read are handed out without a pause: a client sending thousands back to
                # back held the loop (no health check, no group commit, hence no ack) until all were handled.
                await asyncio.sleep(0)
            elif frame.type == WSMsgType.BINARY:
                conn.send({"type": "error", "message": "binary frames are not supported; send JSON text"})
            elif frame.type == WSMsgType.ERROR:
                log.info("websocket closed after an error: %s", ws.exception())
                break
    finally:
        await hub.remove(conn)
    return ws


async def handle_frame(conn: Connection, frame: str) -> None:
    from dominds.server.messages import BadMessage, parse_client_message
    from dominds.server.ws_handlers import HANDLERS

    request_type: str | None = None
    request_id: str | int | None = None
    try:
        message = parse_client_message(frame)
        request_type, request_id = message.type, message.requestId
        await HANDLERS[type(message)](conn, message)
    except BadMessage as exc:
        _error(conn, str(exc), exc.request_type, exc.request_id)
    except (EngineError, StoreError, TaskdocError) as exc:
        _error(conn, str(exc), request_type, request_id)
    except Exception as exc:  # a bug in one handler must not drop the connection or the daemon
        log.exception("websocket handler for %s failed", request_type)
        _error(conn, f"internal error: {type(exc).__name__}: {exc}", request_type, request_id)


def _error(conn: Connection, message: str, request_type: str | None, request_id: str | int | None) -> None:
    reply: dict[str, object] = {"type": "error", "message": message}
    if request_type is not None:
        reply["requestType"] = request_type
    if request_id is not None:
        reply["requestId"] = request_id
    conn.send(reply)
