"""The shared-secret token, the panel's session cookie, the Origin rule and the loopback Host rule.

- Token (on by default): HTTP ``/api/*`` takes ``Authorization: Bearer <token>``; the websocket takes
  the same header or a ``dominds-auth.<token>`` subprotocol (browsers cannot set headers on a
  websocket). Compared in constant time. Static panel files are not protected: they hold no data.
- The token is kept in the workspace (``.dominds/auth-token``, mode 0600) and survives restarts, so an
  open panel keeps working when the daemon comes back; it changes only when asked
  (``dominds url --rotate-token``). A running daemon re-reads the file when it changes.
- Session cookie: the first visit of a page with a valid ``?auth=<token>`` is redirected to the same
  address without it and gets ``dominds_session_<port>`` (HttpOnly, SameSite=Strict), an HMAC of the
  token: the panel then needs no token in script, a reload or a new tab just works, and rotating the
  token invalidates every cookie. A cookie counts only for same-origin requests (``Sec-Fetch-Site``).
- Origin: a browser request from another site is refused (403) on ``/ws`` and ``/api/*``; requests
  without an ``Origin`` (the CLI, scripts) pass and still need the token. This blocks cross-site
  websocket hijacking even for a user who turned the token off.
- Without a token (``--no-auth``, loopback only) the ``Host`` header must name a loopback address,
  so a DNS-rebinding page cannot reach the daemon under its own host name.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from dominds.server.listen import is_loopback_host
from dominds.store.atomic import write_atomic

AUTH_SUBPROTOCOL_PREFIX = "dominds-auth."
PANEL_SUBPROTOCOL = "dominds"
SESSION_COOKIE_PREFIX = "dominds_session_"
SESSION_MAX_AGE_SECONDS = 30 * 24 * 3600
_TOKEN_RE = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")
"""What a token file may hold: a hand-written token is fine if it is long enough and URL-safe."""


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe base64)."""
    return secrets.token_urlsafe(32)


def read_token_file(path: Path) -> str | None:
    """The token kept in ``path``, or None when the file is missing or does not hold a usable token."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _TOKEN_RE.fullmatch(text) else None


def write_token_file(path: Path, token: str) -> None:
    write_atomic(path, token + "\n", mode=0o600)


def load_or_create_token(path: Path) -> str:
    """The workspace's token: the one kept in ``path`` (its mode tightened to 0600), or a new one saved there."""
    token = read_token_file(path)
    if token is None:
        token = new_token()
        write_token_file(path, token)
    elif os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)  # a copied workspace: the secret must not stay readable by others
    return token


def rotate_token(path: Path) -> str:
    """Replace the kept token with a new one (a running daemon switches to it at its next request)."""
    token = new_token()
    write_token_file(path, token)
    return token


class AccessToken:
    """The token a daemon checks: fixed, or the one kept in a file, re-read when the file changes.

    A file that disappears or stops holding a usable token keeps the last good token in force:
    authentication is never switched off by accident.
    """

    def __init__(self, token: str, path: Path | None = None) -> None:
        if not token:
            raise ValueError("the auth token must not be empty")
        self._token = token
        self._path = path
        self._signature: tuple[int, int, int] | None = self._stat()
        self.on_change: Callable[[str], None] | None = None
        """Told of a rotated token (the daemon registers it with the secret redactor)."""

    def _stat(self) -> tuple[int, int, int] | None:
        if self._path is None:
            return None
        try:
            info = os.stat(self._path)
        except OSError:
            return None
        return (info.st_ino, info.st_size, info.st_mtime_ns)

    def current(self) -> str:
        if self._path is not None:
            signature = self._stat()
            if signature != self._signature:
                self._signature = signature
                fresh = read_token_file(self._path)
                if fresh is not None and fresh != self._token:
                    self._token = fresh
                    if self.on_change is not None:
                        self.on_change(fresh)
        return self._token


def session_cookie_name(request: web.Request) -> str:
    """Cookies are shared by every port of a host: the port in the name keeps two daemons apart."""
    try:
        port = request.url.port
    except ValueError:
        port = None
    return f"{SESSION_COOKIE_PREFIX}{port or 0}"


def session_value(token: str) -> str:
    """The cookie's value: derived from the token, so it survives restarts and dies with a rotation."""
    return hmac.new(token.encode("utf-8"), b"dominds-panel-session-v1", hashlib.sha256).hexdigest()


def set_session_cookie(response: web.StreamResponse, request: web.Request, token: str) -> None:
    response.set_cookie(
        session_cookie_name(request),
        session_value(token),
        max_age=SESSION_MAX_AGE_SECONDS,
        path="/",
        httponly=True,
        samesite="Strict",
    )


def session_cookie_valid(request: web.Request, token: str) -> bool:
    """A valid session cookie on a request the browser marks as same-origin (or does not mark at all)."""
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        return False  # another port of this host is "same-site" and would get the cookie too
    given = request.cookies.get(session_cookie_name(request))
    return given is not None and tokens_match(given, session_value(token))


def request_authorized(request: web.Request, token: str) -> bool:
    return tokens_match(bearer_token(request), token) or session_cookie_valid(request, token)


def tokens_match(given: str | None, expected: str) -> bool:
    if given is None:
        return False  # (`return None` is an equivalent mutant: every caller tests truthiness)
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
    if request_authorized(request, token):
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


def host_header_is_loopback(request: web.Request) -> bool:
    try:
        host = request.url.host
    except ValueError:
        return False  # (`return None` is an equivalent mutant: every caller tests truthiness)
    return host is not None and is_loopback_host(host)
