"""Run the daemon's web server until it is told to stop, then shut down gracefully.

``serve_daemon`` serves the front application (server/front.py) on the listening sockets at once (bound
by the caller, ``dominds serve`` binds before it imports anything: server/listen.py; else ``host:port``
or the next free port), then starts the engine (``start``: it may import the engine's modules first),
puts the API application behind the front, reports the panel URL through ``on_ready`` (it prints
nothing itself), and serves until ``stop`` is set, the task is cancelled, or SIGINT/SIGTERM arrive.
Requests that need the engine wait for it meanwhile: one server answers from the first byte.
``run_server`` does the same for an engine given whole (tests, the workflows' commands).
Shutdown: stop accepting connections, close every websocket with ``GOING_AWAY``, ``engine.close()``
(drives are stopped and left resumable; every state change was already persisted), release the port.

Light on purpose: the engine is named for the type checker only.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from aiohttp import web

from dominds.rtws import Rtws
from dominds.server.auth import AccessToken
from dominds.server.front import Back, make_front_app
from dominds.server.import_gate import ImportGate
from dominds.server.keys import ServerSettings
from dominds.server.listen import ServerError, bind_listeners, is_loopback_host, listening_port

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ServerError", "panel_url", "run_server", "serve_daemon"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5666

RouteAdder = Callable[[web.Application], None]
StartEngine = Callable[[], Awaitable[tuple["Engine", Iterable[RouteAdder]]]]
"""Starts the engine; gives it and the route adders of the workflows to mount on the API."""


def panel_url(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    return f"http://{shown}:{port}/" + (f"?auth={token}" if token else "")


async def run_server(
    engine: Engine,
    host: str,
    port: int,
    *,
    token: str | AccessToken | None,
    on_ready: Callable[[str], None],
    allowed_origins: Iterable[str] = (),
    stop: asyncio.Event | None = None,
    handle_signals: bool = True,
    extra_routes: Iterable[RouteAdder] = (),
    sockets: list[socket.socket] | None = None,
) -> None:
    """Serve the panel, ``/ws`` and ``/api/*`` for ``engine`` (started here) until stopped: ``serve_daemon``."""

    async def start() -> tuple[Engine, Iterable[RouteAdder]]:
        await engine.start()
        return engine, extra_routes

    await serve_daemon(
        start,
        engine.rtws,
        host,
        port,
        token=token,
        on_ready=on_ready,
        allowed_origins=allowed_origins,
        stop=stop,
        handle_signals=handle_signals,
        sockets=sockets,
    )


async def serve_daemon(
    start: StartEngine,
    rtws: Rtws,
    host: str,
    port: int,
    *,
    token: str | AccessToken | None,
    on_ready: Callable[[str], None],
    allowed_origins: Iterable[str] = (),
    stop: asyncio.Event | None = None,
    handle_signals: bool = True,
    sockets: list[socket.socket] | None = None,
    gate: ImportGate | None = None,
) -> None:
    """Serve ``rtws``'s daemon until stopped; see the module docstring.

    ``token=None`` turns auth off and is refused unless ``host`` is a loopback address. An
    ``AccessToken`` over the workspace's token file makes a rotation apply without a restart.
    ``sockets``: listening sockets to serve (bound by the caller; else ``host:port`` is bound here).
    ``gate``: the gate ``start``'s importing threads pass (server/import_gate.py).
    """
    if token is None and not is_loopback_host(host):
        raise ServerError(f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {host!r}")
    if token is not None and not token:
        raise ServerError("the auth token must not be empty")
    stop = stop or asyncio.Event()
    installed: list[signal.Signals] = []
    settings = ServerSettings(token=token, allowed_origins=frozenset(allowed_origins))
    back = Back(rtws)
    runner = web.AppRunner(make_front_app(settings, back, gate), shutdown_timeout=5.0)
    engine: Engine | None = None
    try:
        await runner.setup()
        if sockets is None:
            sockets = bind_listeners(host, port)
        for sock in sockets:
            await web.SockSite(runner, sock).start()
        try:
            engine, extra_routes = await start()
            from dominds.server.app import make_api_app  # loaded with the engine's modules

            await back.open(make_api_app(engine, settings, extra_routes=extra_routes), engine)
        finally:
            back.fail()  # no effect once open: requests still waiting are answered (503 if it never opened)
            if gate is not None:
                gate.started()
        installed = _install_signal_handlers(stop) if handle_signals else []
        on_ready(panel_url(host, listening_port(sockets), settings.token))
        await stop.wait()
    finally:
        try:
            # runner.cleanup runs on_shutdown (websockets closed with GOING_AWAY) before closing the listener
            await runner.cleanup()
            if engine is not None:
                await engine.close()
        finally:
            # only now: a second SIGTERM/Ctrl-C during the drain must not kill the daemon half way through
            # writing its drives' final records (it used to: the default handler was back)
            _remove_signal_handlers(installed)


def _install_signal_handlers(stop: asyncio.Event) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not main thread / platform
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    return installed


def _remove_signal_handlers(installed: list[signal.Signals]) -> None:
    loop = asyncio.get_running_loop()
    for sig in installed:
        loop.remove_signal_handler(sig)
