"""Run the daemon's web server until it is told to stop, then shut down gracefully.

``run_server`` starts the engine (so a locked workspace is reported before any port is taken),
binds ``host:port`` or the next free port (listen.py; ``dominds serve`` binds before it imports this
module and hands the sockets over: connections made meanwhile wait in the kernel's accept queue), reports the panel URL through ``on_ready`` (it
prints nothing itself), and serves until ``stop`` is set, the task is cancelled, or SIGINT/SIGTERM arrive.
Shutdown: stop accepting connections, close every websocket with ``GOING_AWAY``, ``engine.close()``
(drives are stopped and left resumable; every state change was already persisted), release the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Iterable

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.server.app import make_app
from dominds.server.auth import AccessToken
from dominds.server.listen import ServerError, bind_listeners, is_loopback_host, listening_port

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ServerError", "panel_url", "run_server"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5666


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
    extra_routes: Iterable[Callable[[web.Application], None]] = (),
    sockets: list[socket.socket] | None = None,
) -> None:
    """Serve the panel, ``/ws`` and ``/api/*`` for ``engine`` until stopped; see the module docstring.

    ``token=None`` turns auth off and is refused unless ``host`` is a loopback address. An
    ``AccessToken`` over the workspace's token file makes a rotation apply without a restart.
    ``sockets``: listening sockets to serve (bound by the caller; else ``host:port`` is bound here).
    """
    if token is None and not is_loopback_host(host):
        raise ServerError(f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {host!r}")
    if token is not None and not token:
        raise ServerError("the auth token must not be empty")
    stop = stop or asyncio.Event()
    installed: list[signal.Signals] = []
    await engine.start()
    runner = web.AppRunner(
        make_app(engine, token=token, allowed_origins=allowed_origins, extra_routes=extra_routes),
        shutdown_timeout=5.0,
    )
    try:
        await runner.setup()
        if sockets is None:
            sockets = bind_listeners(host, port)
        for sock in sockets:
            await web.SockSite(runner, sock).start()
        installed = _install_signal_handlers(stop) if handle_signals else []
        shown = token.current() if isinstance(token, AccessToken) else token
        on_ready(panel_url(host, listening_port(sockets), shown))
        await stop.wait()
    finally:
        try:
            # runner.cleanup runs on_shutdown (websockets closed with GOING_AWAY) before closing the listener
            await runner.cleanup()
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
