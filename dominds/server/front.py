"""The application the daemon's port serves from its first moment: the panel, health, session, listing.

``dominds serve`` must answer with data as soon as it can (docs/performance.md, "Start-up"), but the
engine, the records and the API's modules take most of the start to load. So the port is served by this
light application at once, and every route it does not hold is resolved by the API application
(server/app.py) through a ``DeferredResource`` (server/deferred.py): a request for it waits until the
engine has started, then is answered by the full API, exactly as it would have been later. There is
never a "not ready" answer, and never a second server.

Held here, because they need no engine:

- ``GET /api/health``;
- ``POST``/``DELETE /api/session`` and the panel's page and static files;
- ``GET /api/dialogs``: before the engine has started, listed from the files and the dialog index
  (``listing.early_source``) when that listing is the one the started daemon would give: no tree of
  ``run/`` may need recovery and the kept prices are those in force; otherwise it waits for the engine.

One ``guard`` (server/guard.py) wraps every request, including those the API application answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from dominds import __version__
from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.server import keys
from dominds.server.deferred import DeferredResource
from dominds.server.guard import MAX_BODY_BYTES, ApiError, guard, session
from dominds.server.import_gate import ImportGate
from dominds.server.listing import ListingInThread, ListingSource, NotAtRest, early_source, engine_source
from dominds.store.commit import durable

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

log = logging.getLogger("dominds.server")

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

PANEL_HEADERS = {
    "Cache-Control": "no-cache",
    # Defence in depth around the server-sanitised HTML the panel inserts: only the daemon's own
    # scripts, styles and websocket, no framing, and no Referer that could carry ?auth= away. Images may
    # also be blob: URLs the page made itself (artifacts fetched with the session cookie, attachments).
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


class Back:
    """The API application behind the front, once its engine has started; requests for it wait until then."""

    def __init__(self, rtws: Rtws) -> None:
        self.rtws = rtws
        self.app: web.Application | None = None
        self.engine: Engine | None = None
        self._settled = asyncio.Event()

    async def open(self, app: web.Application, engine: Engine) -> None:
        """Serve ``app`` (the API application over the started ``engine``) from now on."""
        app.freeze()  # as aiohttp's runner does: signals frozen before startup
        await app.startup()
        self.app, self.engine = app, engine
        self._settled.set()

    def fail(self) -> None:
        """The engine will not start (the daemon is stopping): waiting requests are answered 503."""
        self._settled.set()

    async def ready(self) -> web.Application:
        await self._settled.wait()
        if self.app is None:  # raised while the request is routed: answered as the guard answers failures
            raise web.HTTPServiceUnavailable(
                text=json.dumps({"error": "the daemon is stopping: its engine did not start"}),
                content_type="application/json",
                headers={"Retry-After": "1"},
            )
        return self.app

    async def started_engine(self) -> Engine:
        await self.ready()
        assert self.engine is not None
        return self.engine

    async def shutdown(self) -> None:
        if self.app is not None:
            await self.app.shutdown()

    async def cleanup(self) -> None:
        if self.app is not None:
            await self.app.cleanup()


BACK: web.AppKey[Back] = web.AppKey("back", Back)


def make_front_app(settings: keys.ServerSettings, back: Back, gate: ImportGate | None = None) -> web.Application:
    """The application to serve: its own routes, then every route of ``back``'s application once open."""
    app = web.Application(middlewares=[*([gate.middleware] if gate else []), guard], client_max_size=MAX_BODY_BYTES)
    app[keys.SETTINGS] = settings
    app[BACK] = back
    app.router.add_get("/api/health", health)
    app.router.add_get("/api/dialogs", list_dialogs)
    app.router.add_post("/api/session", session)
    app.router.add_delete("/api/session", session)
    app.router.add_get("/", _index)
    app.router.add_get("/static/highlight.css", _highlight_css)  # before the static route that would shadow it
    app.router.add_static("/static/", STATIC_DIR, append_version=False)
    app.router.register_resource(DeferredResource("", back.ready, lambda: back.app))

    async def shutdown(app: web.Application) -> None:
        await back.shutdown()  # the API's websockets are closed with GOING_AWAY

    async def cleanup(app: web.Application) -> None:
        await back.cleanup()

    app.on_shutdown.append(shutdown)
    app.on_cleanup.append(cleanup)
    return app


def health_payload() -> dict[str, object]:
    """The body of ``GET /api/health`` (public). ``ready`` is always true: the port is served by one
    application from the first moment (requests it needs the engine for wait for it); kept for clients
    that wait on it."""
    return {"ok": True, "server": "dominds", "version": __version__, "ready": True}


async def health(request: web.Request) -> web.Response:
    return web.json_response(health_payload())


async def list_dialogs(request: web.Request) -> web.StreamResponse:
    """``{"dialogs": [...]}``, sent tree by tree: a listing of 100,000 dialogs never sits in memory whole;
    ``?limit=N``: the first N trees only, and ``more`` (how many were left out)."""
    wanted = tuple(s for s in request.query.get("status", ",".join(DIALOG_STATUSES)).split(",") if s)
    unknown = [s for s in wanted if s not in DIALOG_STATUSES]
    if unknown:
        raise ApiError(400, f"unknown status {unknown[0]!r}; expected some of {', '.join(DIALOG_STATUSES)}")
    limit = None
    if "limit" in request.query:
        text = request.query["limit"]
        try:
            limit = int(text)
        except ValueError:
            limit = 0
        if limit < 1:
            raise ApiError(400, f"limit must be a whole number of trees, 1 or more, not {text!r}")
    back = request.app[BACK]
    await durable()  # what it lists is on disk
    if back.engine is None:
        early = early_source(back.rtws)
        if early is None:
            log.debug("the dialog list waits for the engine: the prices kept at the last start are not those in force")
        else:
            response = await _stream_listing(request, early, wanted, limit)
            if response is not None:
                log.debug("the dialog list was answered before the engine started")
                return response
            log.debug("the dialog list waits for the engine: a tree of run/ may need recovery")
    engine = await back.started_engine()
    response = await _stream_listing(request, engine_source(engine), wanted, limit)
    assert response is not None  # only an early listing is refused
    return response


async def _stream_listing(
    request: web.Request, source: ListingSource, wanted: tuple[str, ...], limit: int | None
) -> web.StreamResponse | None:
    """The listing of ``source``, made off the event loop (100,000 dialogs take seconds); ``None`` when
    ``source`` is an early one and recovery may change what it would say (nothing was sent)."""
    listing = ListingInThread(source, wanted, limit)
    try:
        try:
            chunk = await listing.next_chunk()  # a failure before the first piece is a plain error response
        except NotAtRest:
            return None
        response = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8"})
        await response.prepare(request)
        while chunk is not None:
            await response.write(chunk)
            chunk = await listing.next_chunk()
    finally:
        await listing.close()
    await response.write_eof()
    return response


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html", headers=PANEL_HEADERS)


def _highlight_css_text() -> str:
    from dominds.server.render import highlight_css  # Pygments: loaded on the first page, off the event loop

    return highlight_css()


async def _highlight_css(request: web.Request) -> web.Response:
    """Token colours of server-side highlighted code (light and dark), generated from Pygments."""
    text = await asyncio.to_thread(_highlight_css_text)
    return web.Response(text=text, content_type="text/css", headers={"Cache-Control": "no-cache"})
