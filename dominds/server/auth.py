"""The shared-secret token, the Origin rule and the loopback Host rule.

- Token (on by default): HTTP ``/api/*`` takes ``Authorization: Bearer <token>``; the websocket takes
  the same header or a ``dominds-auth.<token>`` subprotocol (browsers cannot set headers on a
  websocket). Compared in constant time. Static panel files are not protected: they hold no data.
- Origin: a browser request from another site is refused (403) on ``/ws`` and ``/api/*``; requests
  without an ``Origin`` (the CLI, scripts) pass and still need the token. This blocks cross-site
  websocket hijacking even for a user who turned the token off.
- Without a token (``--no-auth``, loopback only) the ``Host`` header must name a loopback address,
  so a DNS-rebinding page cannot reach the daemon under its own host name.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets

from aiohttp import web

AUTH_SUBPROTOCOL_PREFIX = "dominds-auth."
PANEL_SUBPROTOCOL = "dominds"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe base64): printed once in the ``?auth=`` URL."""
    return secrets.token_urlsafe(32)


def tokens_match(given: str | None, expected: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


def bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def offered_subprotocols(request: web.Request) -> list[str]:
    header = request.headers.get("Sec-WebSocket-Protocol", "")
    return [item.strip() for item in header.split(",") if item.strip()]


def choose_subprotocol(offered: list[str]) -> str | None:
    """The subprotocol to accept: ``dominds`` when offered, else the first one.

    A browser fails the handshake when it offered subprotocols and the server selects none, so
    one is always selected when any was offered (like the ``ws`` library's default).
    """
    if PANEL_SUBPROTOCOL in offered:
        return PANEL_SUBPROTOCOL
    return offered[0] if offered else None


def websocket_authorized(request: web.Request, token: str, offered: list[str]) -> bool:
    if tokens_match(bearer_token(request), token):
        return True
    candidates = [p[len(AUTH_SUBPROTOCOL_PREFIX) :] for p in offered if p.startswith(AUTH_SUBPROTOCOL_PREFIX)]
    # compare every candidate so the time taken does not depend on which one matched
    return any([tokens_match(candidate, token) for candidate in candidates])


def origin_allowed(request: web.Request, allowed_origins: frozenset[str]) -> bool:
    """No ``Origin`` (not a browser), the daemon's own origin, or one listed in ``allowed_origins``."""
    origin = request.headers.get("Origin")
    if origin is None or origin in allowed_origins:
        return True
    return origin.lower() == f"{request.scheme}://{request.host}".lower()


def is_loopback_host(host: str) -> bool:
    """True for a loopback IP address or name (``127.0.0.1``, ``::1``, ``[::1]``, ``localhost``)."""
    name = host.strip().lower().removeprefix("[").removesuffix("]")
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_header_is_loopback(request: web.Request) -> bool:
    try:
        host = request.url.host
    except ValueError:
        return False
    return host is not None and is_loopback_host(host)
