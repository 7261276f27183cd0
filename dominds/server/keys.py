"""Typed application state (``web.AppKey``), so handlers get checked types instead of string keys.

Light on purpose: the front application (server/front.py) holds ``SETTINGS`` before the engine's
modules are imported, so the engine and the hub are named for the type checker only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from dominds.server.auth import AccessToken

if TYPE_CHECKING:
    from dominds.driver.engine import Engine
    from dominds.server.hub import Hub


class ServerSettings:
    """How requests are let in: the token (fixed or kept in a file) and the extra allowed Origins."""

    def __init__(self, token: str | AccessToken | None, allowed_origins: frozenset[str]) -> None:
        self.access = AccessToken(token) if isinstance(token, str) else token
        """``None`` = auth off (only allowed on loopback, enforced by ``run_server``)."""
        self.allowed_origins = allowed_origins
        """Browser origins accepted besides the daemon's own (e.g. a dev server)."""

    @property
    def token(self) -> str | None:
        """The shared secret in force now (a rotated token file applies at once)."""
        return self.access.current() if self.access is not None else None


ENGINE: web.AppKey[Engine] = web.AppKey("engine")
SETTINGS: web.AppKey[ServerSettings] = web.AppKey("settings", ServerSettings)
HUB: web.AppKey[Hub] = web.AppKey("hub")
