"""The aiohttp application: static panel, ``/ws``, ``/api/*``, and the guard middleware.

``make_app`` does not own the engine: whoever started it closes it (``run_server`` does both). The
app's own startup/cleanup hooks start and stop the Taskdoc watcher and close every websocket with
``GOING_AWAY`` on shutdown, so clients reconnect and resume instead of hanging.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from aiohttp import web

from dominds.driver.engine import Engine, EngineBadRequest, EngineError
from dominds.driver.errors import QueueFull
from dominds.server import keys
from dominds.server.api import ApiError, add_api_routes
from dominds.server.auth import (
    AccessToken,
    host_header_is_loopback,
    origin_allowed,
    request_authorized,
    session_cookie_name,
    set_session_cookie,
    tokens_match,
)
from dominds.server.hub import MAX_OUTBOX_BYTES, Hub
from dominds.server.render import highlight_css
from dominds.server.requests_api import add_request_routes
from dominds.server.resting import SWEEP_SECONDS
from dominds.server.tools_api import add_tools_routes
from dominds.server.views import taskdoc_payload
from dominds.server.ws import websocket_handler
from dominds.store.commit import durable
from dominds.store.errors import DialogNotFoundError, StoreError
from dominds.taskdoc import TaskdocError

log = logging.getLogger("dominds.server")

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
MAX_BODY_BYTES = 1024 * 1024
PUBLIC_API_PATHS = frozenset({"/api/health"})
"""Answered without a token: lets the CLI and scripts see whether a daemon is listening."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json_error(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers or None)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    settings = request.app[keys.SETTINGS]
    if settings.token is None and not host_header_is_loopback(request):
        return _json_error(
            403, "without a token the daemon only answers loopback host names (DNS-rebinding guard)"
        )
    token = settings.token
    if not request.path.startswith("/api/"):
        if token is not None and request.method == "GET" and "auth" in request.query:
            return _enter_with_link(request, token)
        return await handler(request)
    if not origin_allowed(request, settings.allowed_origins):
        return _json_error(403, "forbidden origin")
    if token is not None and request.path not in PUBLIC_API_PATHS and not request_authorized(request, token):
        return _json_error(401, "unauthorized", **{"WWW-Authenticate": "Bearer"})
    response = await _answer(request, handler)
    await durable()  # nothing is acknowledged before the writes it reports are durable (store/commit.py)
    return response


async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return _json_error(exc.status, str(exc))
    except DialogNotFoundError as exc:
        return _json_error(404, str(exc))
    except (EngineBadRequest, TaskdocError) as exc:
        return _json_error(400, str(exc))
    except QueueFull as exc:
        return _json_error(429, str(exc), **{"Retry-After": "1"})
    except EngineError as exc:
        return _json_error(409, str(exc))
    except StoreError as exc:
        return _json_error(500, f"storage error: {exc}")
    except web.HTTPException as exc:  # aiohttp's own (404 route, 405 method, 413 body) as JSON too
        if exc.status < 400:
            raise
        return _json_error(exc.status, exc.reason)
    except Exception as exc:  # a bug: answer it like any other failure, keep the daemon serving
        log.exception("API %s %s failed", request.method, request.path)
        return _json_error(500, f"internal error: {type(exc).__name__}: {exc}")


def _enter_with_link(request: web.Request, token: str) -> web.StreamResponse:
    """A page opened with ``?auth=``: the same address without it, plus the session cookie if it is right.

    The token leaves the address bar (and the history entry) at once; a wrong one is simply dropped and
    the page asks for the token in place (``?auth=`` stays in the redirect as ``authFailed=1``).
    """
    query = request.rel_url.query.copy()
    given = query.popall("auth", [])
    accepted = any([tokens_match(value, token) for value in given])
    if not accepted:
        query["authFailed"] = "1"
    response = web.Response(
        status=303, headers={"Location": str(request.rel_url.with_query(query)), "Cache-Control": "no-store"}
    )
    if accepted:
        set_session_cookie(response, request, token)
    return response


async def session(request: web.Request) -> web.Response:
    """``POST /api/session`` (bearer token) sets the panel's session cookie; ``DELETE`` clears it."""
    response = web.json_response({"ok": True})
    token = request.app[keys.SETTINGS].token
    if request.method == "DELETE":
        response.del_cookie(session_cookie_name(request), path="/")
    elif token is not None:
        set_session_cookie(response, request, token)
    return response


def _push_taskdoc(hub: Hub, path: str) -> None:
    """The Taskdoc at ``path`` changed on disk: send it to every connection following one of its dialogs."""
    by_language: dict[str, str] = {}
    for conn in list(hub.connections):
        followers = [self_id for self_id, doc in conn.followed.items() if doc == path]
        if not followers:
            continue
        text = by_language.get(conn.ui_language)
        if text is None:
            try:
                payload = taskdoc_payload(hub.engine, path, conn.ui_language)
            except TaskdocError:
                return
            text = by_language[conn.ui_language] = json.dumps(
                {"type": "taskdoc_content", **payload}, ensure_ascii=False
            )
        conn.send_text(text)


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


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html", headers=PANEL_HEADERS)


async def _highlight_css(request: web.Request) -> web.Response:
    """Token colours of server-side highlighted code (light and dark), generated from Pygments."""
    return web.Response(text=highlight_css(), content_type="text/css", headers={"Cache-Control": "no-cache"})


def make_app(
    engine: Engine,
    *,
    token: str | AccessToken | None,
    allowed_origins: Iterable[str] = (),
    taskdoc_poll_interval: float = 1.0,
    rest_sweep_interval: float = SWEEP_SECONDS,
    extra_routes: Iterable[Callable[[web.Application], None]] = (),
    outbox_bytes: int = MAX_OUTBOX_BYTES,
) -> web.Application:
    """The daemon's web application over a started ``engine``; ``extra_routes`` mount workflows;
    ``rest_sweep_interval``: seconds between unloads of the trees at rest nobody displays (resting.py)."""
    app = web.Application(middlewares=[guard], client_max_size=MAX_BODY_BYTES)
    app[keys.ENGINE] = engine
    settings = keys.ServerSettings(token=token, allowed_origins=frozenset(allowed_origins))
    engine.secrets.register("daemon access token", settings.token)
    if settings.access is not None:
        settings.access.on_change = lambda fresh: engine.secrets.register("daemon access token", fresh)
    app[keys.SETTINGS] = settings
    app[keys.HUB] = Hub(
        engine,
        taskdoc_poll_interval=taskdoc_poll_interval,
        rest_sweep_interval=rest_sweep_interval,
        outbox_bytes=outbox_bytes,
    )
    add_api_routes(app)
    app.router.add_post("/api/session", session)
    app.router.add_delete("/api/session", session)
    add_tools_routes(app)
    add_request_routes(app)
    app.router.add_get("/ws", websocket_handler)
    app.router.add_get("/", _index)
    app.router.add_get("/static/highlight.css", _highlight_css)  # before the static route that would shadow it
    app.router.add_static("/static/", STATIC_DIR, append_version=False)
    for add_routes in extra_routes:
        add_routes(app)

    async def start_hub(app: web.Application) -> None:
        app[keys.HUB].start(_push_taskdoc)

    async def close_websockets(app: web.Application) -> None:
        await app[keys.HUB].close_all()

    async def stop_hub(app: web.Application) -> None:
        await app[keys.HUB].stop()

    app.on_startup.append(start_hub)
    app.on_shutdown.append(close_websockets)
    app.on_cleanup.append(stop_hub)
    return app
