"""What the port answers while the daemon starts: ``/api/health`` says so, anything else is "retry soon".

``dominds serve`` binds its sockets first (listen.py), then imports aiohttp and serves this small app on
them while the engine, the records and the panel's API load in a worker thread (about twice as long as
aiohttp itself). So the port answers honestly from the first fraction of a second: ``GET /api/health``
is ``{"ok": true, "ready": false, ...}`` (the full app answers ``"ready": true``), a page is a 503 that
reloads itself each second, and every other request is a 503 JSON error with ``Retry-After: 1``.
Nothing here reads or writes the workspace, and nothing needs the token: no data is served.
``run_server`` stops this app right before the full one serves the same sockets; connections made in
between wait in the kernel's accept queue.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

from aiohttp import web

from dominds import __version__
from dominds.server.auth import host_header_is_loopback

RETRY_SECONDS = 1
STARTING_PAGE = (
    '<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="1">'
    "<title>Dominds is starting</title></head><body><p>Dominds is starting…</p></body></html>"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def health_payload(ready: bool) -> dict[str, object]:
    """The body of ``GET /api/health`` (public; also answered by the full app, with ``ready: true``)."""
    return {"ok": True, "server": "dominds", "version": __version__, "ready": ready}


class StartingServer:
    """Serves the starting app on the daemon's sockets until ``stop()`` (idempotent)."""

    def __init__(self, sockets: list[socket.socket], *, token_required: bool) -> None:
        self._sockets = sockets
        self._runner = web.AppRunner(_starting_app(token_required), handle_signals=False, shutdown_timeout=1.0)
        self._started = False

    async def start(self) -> None:
        await self._runner.setup()
        self._started = True
        for sock in self._sockets:
            # a duplicate descriptor: stopping this site closes it, the listening socket stays open
            await web.SockSite(self._runner, sock.dup()).start()

    async def stop(self) -> None:
        if self._started:
            self._started = False
            await self._runner.cleanup()


def _starting_app(token_required: bool) -> web.Application:
    @web.middleware
    async def loopback_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not token_required and not host_header_is_loopback(request):
            return web.json_response(
                {"error": "without a token the daemon only answers loopback host names (DNS-rebinding guard)"},
                status=403,
            )
        return await handler(request)

    app = web.Application(middlewares=[loopback_guard])
    app.router.add_get("/api/health", _health)
    app.router.add_route("*", "/{tail:.*}", _not_yet)
    return app


async def _health(request: web.Request) -> web.Response:
    return web.json_response(health_payload(ready=False), headers={"Cache-Control": "no-store"})


async def _not_yet(request: web.Request) -> web.Response:
    headers = {"Retry-After": str(RETRY_SECONDS), "Cache-Control": "no-store", "Connection": "close"}
    if request.method == "GET" and not request.path.startswith("/api/") and request.path != "/ws":
        return web.Response(status=503, text=STARTING_PAGE, content_type="text/html", headers=headers)
    return web.json_response({"error": "the daemon is starting; retry in a moment"}, status=503, headers=headers)
