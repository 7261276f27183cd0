"""Run the daemon's web server until it is told to stop, then shut down gracefully.

``run_server`` starts the engine (so a locked workspace is reported before any port is taken),
binds ``host:port`` or the next free port, reports the panel URL through ``on_ready`` (it prints
nothing itself), and serves until ``stop`` is set, the task is cancelled, or SIGINT/SIGTERM arrive.
Shutdown: stop accepting connections, close every websocket with ``GOING_AWAY``, ``engine.close()``
(drives are stopped and left resumable; every state change was already persisted), release the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
from collections.abc import Callable, Iterable

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.server.app import make_app
from dominds.server.auth import AccessToken, is_loopback_host

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5666
PORT_ATTEMPTS = 20
"""How many consecutive ports are tried when the requested one is taken."""


class ServerError(Exception):
    """The server cannot start as asked (the message says why)."""


def panel_url(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    return f"http://{shown}:{port}/" + (f"?auth={token}" if token else "")


async def bind_site(
    runner: web.AppRunner, host: str, port: int, attempts: int = PORT_ATTEMPTS
) -> web.TCPSite:
    """Start a site on ``port`` or the next free one (``port=0``: any free port)."""
    last_error: OSError | None = None
    for candidate in [0] if port == 0 else range(port, min(port + attempts, 65536)):
        site = web.TCPSite(runner, host, candidate, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await site.stop()  # unregister the failed site from the runner
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise ServerError(f"cannot listen on {host}:{candidate}: {exc.strerror or exc}") from exc
            last_error = exc
            continue
        return site
    raise ServerError(f"no free port in {port}..{port + attempts - 1} on {host}: {last_error}")


def bound_port(runner: web.AppRunner) -> int:
    """The port actually listened on (differs from the requested one after a fallback or with port 0)."""
    address = runner.addresses[0]
    return int(address[1])


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
) -> None:
    """Serve the panel, ``/ws`` and ``/api/*`` for ``engine`` until stopped; see the module docstring.

    ``token=None`` turns auth off and is refused unless ``host`` is a loopback address. An
    ``AccessToken`` over the workspace's token file makes a rotation apply without a restart.
    """
    if token is None and not is_loopback_host(host):
        raise ServerError(f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {host!r}")
    if token is not None and not token:
        raise ServerError("the auth token must not be empty")
    stop = stop or asyncio.Event()
    await engine.start()
    runner = web.AppRunner(
        make_app(engine, token=token, allowed_origins=allowed_origins, extra_routes=extra_routes),
        shutdown_timeout=5.0,
    )
    try:
        await runner.setup()
        await bind_site(runner, host, port)
        installed = _install_signal_handlers(stop) if handle_signals else []
        try:
            shown = token.current() if isinstance(token, AccessToken) else token
            on_ready(panel_url(host, bound_port(runner), shown))
            await stop.wait()
        finally:
            _remove_signal_handlers(installed)
    finally:
        # runner.cleanup runs on_shutdown (websockets closed with GOING_AWAY) before closing the listener
        await runner.cleanup()
        await engine.close()


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
