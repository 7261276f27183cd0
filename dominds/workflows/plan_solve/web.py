"""The websocket endpoint ``/plan-solve/ws``: mounted in ``dominds serve`` or served on its own.

Mounting: ``add_routes(app)`` on an app that already holds ``keys.ENGINE`` and ``keys.SETTINGS``; the
daemon's token and Origin rules apply (token as ``Authorization: Bearer`` or a ``dominds-auth.<token>``
subprotocol; without a token only loopback Host names are answered). Standalone: ``serve_standalone``
builds its own app and engine on a workspace (``dominds plan-solve serve``); there the service also
answers at the root path, because seed §1 tells clients to connect to ``ws://<host>:<port>`` with no path.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import WSCloseCode, WSMsgType, web

from dominds import extras
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import demo_prompts, keys
from dominds.server.auth import (
    choose_subprotocol,
    host_header_is_loopback,
    offered_subprotocols,
    origin_allowed,
    websocket_authorized,
)
from dominds.server.listen import is_loopback_host
from dominds.workflows.plan_solve.events import make_event
from dominds.workflows.plan_solve.members import plan_solve_extensions
from dominds.workflows.plan_solve.protocol import handle_frame
from dominds.workflows.plan_solve.session import Connection, PlanSolveService, close_connection
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.web_page import PAGE_PATH, add_page_routes

WS_PATH = "/plan-solve/ws"
MAX_MESSAGE_BYTES = 1024 * 1024
"""The origin's ``max_size``: a larger frame closes the socket with 1009."""
PING_SECONDS = 30.0
"""Transport ping interval (the origin's ``ping_interval``); ``system.heartbeat`` is separate."""
CLOSE_UNAUTHORIZED = 4401
PLAN_SOLVE: web.AppKey[PlanSolveService] = web.AppKey("plan_solve", PlanSolveService)


class StandaloneError(Exception):
    """The standalone service cannot start as asked (the message says why)."""


def add_routes(app: web.Application, settings: PlanSolveSettings | None = None) -> None:
    """Serve Plan & Solve at ``/plan-solve/ws``, its page at ``/plan-solve`` and the page's API
    (web_page.py), on the app's engine (``app[keys.ENGINE]``). Without DuckDB and python-pptx (the
    ``plan-solve`` extra) every one of these paths answers the one line saying how to install them."""
    missing = extras.missing_extra_message(extras.PLAN_SOLVE)
    if missing is not None:
        _add_missing_extra_routes(app, missing)
        return
    engine = app[keys.ENGINE]
    engine.config.extend(plan_solve_extensions())  # idempotent: serve's engine has them already
    app[PLAN_SOLVE] = PlanSolveService(engine, settings or PlanSolveSettings())
    app.router.add_get(WS_PATH, websocket_handler)
    add_page_routes(app, PLAN_SOLVE)
    app.on_shutdown.append(_close_all)


def _add_missing_extra_routes(app: web.Application, message: str) -> None:
    """The page says what is missing and how to install it; the API and the websocket answer 503 with it."""
    page = (
        "<!doctype html><html><head><meta charset=utf-8><title>Plan &amp; Solve</title></head>"
        f"<body><h1>Plan &amp; Solve</h1><p id=missing-extra>{html.escape(message)}</p></body></html>"
    )

    async def page_handler(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html", status=503)

    async def api_handler(request: web.Request) -> web.Response:
        return web.json_response({"error": message}, status=503)

    app.router.add_get(PAGE_PATH, page_handler)
    app.router.add_get(WS_PATH, api_handler)
    app.router.add_route("*", "/api/plan-solve/{rest:.*}", api_handler)


async def websocket_handler(request: web.Request) -> web.StreamResponse:
    service = request.app[PLAN_SOLVE]
    server_settings = request.app[keys.SETTINGS]
    if not origin_allowed(request, server_settings.allowed_origins):
        raise web.HTTPForbidden(text='{"error": "forbidden origin"}', content_type="application/json")
    if server_settings.token is None and not host_header_is_loopback(request):
        raise web.HTTPForbidden(
            text='{"error": "without a token only loopback host names are answered"}',
            content_type="application/json",
        )
    offered = offered_subprotocols(request)
    chosen = choose_subprotocol(offered)
    ws = web.WebSocketResponse(
        protocols=(chosen,) if chosen else (), max_msg_size=MAX_MESSAGE_BYTES, heartbeat=PING_SECONDS
    )
    await ws.prepare(request)
    if server_settings.token is not None and not websocket_authorized(
        request, server_settings.token, offered
    ):
        await ws.close(code=CLOSE_UNAUTHORIZED, message=b"unauthorized")
        return ws
    conn = Connection(ws)
    service.connections.add(conn)
    writer = asyncio.create_task(conn.write_forever(), name=f"plan-solve-writer-{conn.id}")
    heartbeat = asyncio.create_task(_heartbeat(service, conn), name=f"plan-solve-heartbeat-{conn.id}")
    conn.send(make_event("system.connected", content="Connected", metadata={"connection_id": conn.id}))
    try:
        async for frame in ws:
            if frame.type == WSMsgType.TEXT:
                await handle_frame(service, conn, frame.data)
            elif frame.type == WSMsgType.BINARY:
                conn.send(
                    make_event("system.error", content="Binary frames are not supported; send JSON text")
                )
            elif frame.type == WSMsgType.ERROR:
                break
    finally:
        # aiohttp cancels the handler when the peer vanishes; the sessions must still be closed, so the
        # cleanup runs as a task of the service (awaited at shutdown) that this handler's cancellation
        # cannot interrupt.
        cleanup = service.cleanups.spawn(_finish_connection(service, conn, writer, heartbeat), f"plan-solve-close-{conn.id}")
        await asyncio.shield(cleanup)
    return ws


async def _finish_connection(
    service: PlanSolveService, conn: Connection, writer: asyncio.Task[None], heartbeat: asyncio.Task[None]
) -> None:
    heartbeat.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await heartbeat
    await close_connection(service, conn)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(writer, 5.0)
    service.connections.discard(conn)


async def _heartbeat(service: PlanSolveService, conn: Connection) -> None:
    while True:
        await asyncio.sleep(service.settings.heartbeat_seconds)
        uptime = round(time.monotonic() - service.started_at, 1)
        conn.send(
            make_event(
                "system.heartbeat", metadata={"active_sessions": service.active_sessions(), "uptime": uptime}
            )
        )


async def _close_all(app: web.Application) -> None:
    service = app[PLAN_SOLVE]
    service.stopping = True  # the runs closed below were not cancelled by anyone: they are interrupted
    for conn in list(service.connections):
        await close_connection(service, conn)
        await conn.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(service.cleanups.wait(), 5.0)
    await service.cleanups.aclose()  # a cleanup still running after that is cancelled, and awaited


ROOT_HELP = (
    "Plan & Solve websocket service (seed 001). Connect a websocket to this address "
    "(ws://<host>:<port>, or ws://<host>:<port>/plan-solve/ws) and send {\"event\": \"user.create_session\"}; "
    "or open /plan-solve in a browser.\n"
)


async def root_handler(request: web.Request) -> web.StreamResponse:
    """The standalone root: the websocket for clients of the seed, a short explanation for a browser."""
    if web.WebSocketResponse().can_prepare(request).ok:
        return await websocket_handler(request)
    return web.Response(text=ROOT_HELP, content_type="text/plain")


SHARED_PAGE_FILES = ("workflow_i18n.js", "workflow_theme.css", "workflow_examples.js")
"""Files of the panel's static folder every workflow page loads from ``/static/``; ``dominds serve`` has
them with the panel, the standalone service serves just these (without them its page stayed blank)."""
PANEL_STATIC_DIR = Path(__file__).resolve().parents[2] / "static"


def _shared_file(name: str) -> Callable[[web.Request], Awaitable[web.FileResponse]]:
    async def handler(request: web.Request) -> web.FileResponse:
        return web.FileResponse(PANEL_STATIC_DIR / name, headers={"Cache-Control": "no-cache"})

    return handler


def make_standalone_app(engine: Engine, settings: PlanSolveSettings) -> web.Application:
    app = web.Application(client_max_size=MAX_MESSAGE_BYTES)
    app[keys.ENGINE] = engine
    app[keys.SETTINGS] = keys.ServerSettings(token=settings.token, allowed_origins=settings.allowed_origins)
    add_routes(app, settings)
    app.router.add_get("/", root_handler)
    for name in SHARED_PAGE_FILES:
        app.router.add_get(f"/static/{name}", _shared_file(name))
    app.router.add_get("/api/workflow-examples", demo_prompts.workflow_examples)  # the page's example button
    return app


async def serve_standalone(
    workspace: Rtws,
    host: str,
    port: int,
    settings: PlanSolveSettings,
    on_ready: Callable[[str], None],
    stop: asyncio.Event | None = None,
) -> None:
    """Run the service on its own engine until ``stop`` is set or SIGINT/SIGTERM arrive.

    ``on_ready`` gets the root address ``ws://<host>:<port>`` (``WS_PATH`` answers as well)."""
    if settings.token is None and not is_loopback_host(host):
        raise StandaloneError(f"without --token the service only listens on a loopback address, not {host!r}")
    stop = stop or asyncio.Event()
    engine = Engine(workspace, extensions=plan_solve_extensions())
    await engine.start()
    runner = web.AppRunner(make_standalone_app(engine, settings), shutdown_timeout=5.0)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    try:
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            raise StandaloneError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        on_ready(f"ws://{shown}:{runner.addresses[0][1]}")
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
        await stop.wait()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        await runner.cleanup()
        await engine.close()
