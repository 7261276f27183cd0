"""The API application: ``/ws`` and ``/api/*`` over a started engine, behind the front (server/front.py).

``make_app`` does not own the engine: whoever started it closes it (``run_server`` does both). The
API application's own startup/cleanup hooks start and stop the Taskdoc watcher and close every
websocket with ``GOING_AWAY`` on shutdown, so clients reconnect and resume instead of hanging.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.server import keys
from dominds.server.api import add_api_routes
from dominds.server.auth import AccessToken
from dominds.server.front import Back, make_front_app
from dominds.server.hub import MAX_OUTBOX_BYTES, Hub
from dominds.server.requests_api import add_request_routes
from dominds.server.resting import SWEEP_SECONDS
from dominds.server.tools_api import add_tools_routes
from dominds.server.views import taskdoc_payload
from dominds.server.ws import websocket_handler
from dominds.taskdoc import TaskdocError


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


def make_api_app(
    engine: Engine,
    settings: keys.ServerSettings,
    *,
    taskdoc_poll_interval: float = 1.0,
    rest_sweep_interval: float = SWEEP_SECONDS,
    extra_routes: Iterable[Callable[[web.Application], None]] = (),
    outbox_bytes: int = MAX_OUTBOX_BYTES,
) -> web.Application:
    """The API over a started ``engine``, served behind the front application (server/front.py), whose
    guard wraps its requests; ``extra_routes`` mount workflows; ``rest_sweep_interval``: seconds
    between unloads of the trees at rest nobody displays (resting.py)."""
    app = web.Application()
    app[keys.ENGINE] = engine
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
    add_tools_routes(app)
    add_request_routes(app)
    app.router.add_get("/ws", websocket_handler)
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
    """The daemon's web application over a started ``engine``: the front application (server/front.py)
    with the API behind it from its startup, as ``run_server`` serves them. The returned application
    also holds the engine and the hub (``keys.ENGINE``, ``keys.HUB``) for whoever runs it."""
    settings = keys.ServerSettings(token=token, allowed_origins=frozenset(allowed_origins))
    back = Back(engine.rtws)
    front = make_front_app(settings, back)
    api = make_api_app(
        engine,
        settings,
        taskdoc_poll_interval=taskdoc_poll_interval,
        rest_sweep_interval=rest_sweep_interval,
        extra_routes=extra_routes,
        outbox_bytes=outbox_bytes,
    )
    front[keys.ENGINE] = engine
    front[keys.HUB] = api[keys.HUB]

    async def open_back(app: web.Application) -> None:
        await back.open(api, engine)

    front.on_startup.append(open_back)
    return front
