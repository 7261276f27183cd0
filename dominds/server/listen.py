"""The daemon's listening sockets, bound with the standard library before anything heavy is imported.

``dominds serve`` binds first (``bind_listeners``), so the port is taken and listening within a few
milliseconds of the process starting: a connection made while the rest loads waits in the kernel's
accept queue instead of being refused. aiohttp then serves these very sockets (``web.SockSite``);
``run_server`` binds them itself when it is not handed any. This module is the one owner of the port
choice: the requested port, else the next free one (``PORT_ATTEMPTS`` of them), ``0`` for any.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Sequence
from typing import Any

from dominds.loopback import is_loopback_host as is_loopback_host  # re-exported: the listeners' rule

PORT_ATTEMPTS = 20
"""How many consecutive ports are tried when the requested one is taken."""
BACKLOG = 128
"""Connections the kernel queues while the daemon is busy (aiohttp's own default)."""


class ServerError(Exception):
    """The server cannot start as asked (the message says why)."""


def bind_listeners(host: str, port: int, attempts: int = PORT_ATTEMPTS) -> list[socket.socket]:
    """Listening sockets for every address of ``host``, all on ``port`` or the next port free on all.

    Like asyncio's ``create_server`` (which aiohttp's ``TCPSite`` used): ``SO_REUSEADDR``, and an
    IPv6 socket listens on IPv6 only (each address family gets its own socket).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ServerError(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from exc
    addresses = list(dict.fromkeys((family, address) for family, _t, _p, _c, address in infos))
    last_error: OSError | None = None
    for candidate in [0] if port == 0 else range(port, min(port + attempts, 65536)):
        try:
            return _bind_all(addresses, candidate)
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise ServerError(f"cannot listen on {host}:{candidate}: {exc.strerror or exc}") from exc
            last_error = exc
    raise ServerError(f"no free port in {port}..{port + attempts - 1} on {host}: {last_error}")


def _bind_all(addresses: Sequence[tuple[int, tuple[Any, ...]]], port: int) -> list[socket.socket]:
    """One listening socket per address on ``port`` (``0``: the port the first one got); all or none."""
    bound: list[socket.socket] = []
    try:
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port, *address[2:]))
            sock.listen(BACKLOG)
            sock.setblocking(False)
            port = port or sock.getsockname()[1]
    except BaseException:
        for sock in bound:
            with contextlib.suppress(OSError):
                sock.close()
        raise
    return bound


def listening_port(sockets: list[socket.socket]) -> int:
    """The port the sockets listen on (differs from the requested one after a fallback or with port 0)."""
    return int(sockets[0].getsockname()[1])
