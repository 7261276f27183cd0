"""Typed application state (``web.AppKey``), so handlers get checked types instead of string keys."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.server.hub import Hub
from dominds.server.listing import CostCache


@dataclass(frozen=True)
class ServerSettings:
    token: str | None
    """Shared secret; ``None`` = auth off (only allowed on loopback, enforced by ``run_server``)."""
    allowed_origins: frozenset[str]
    """Browser origins accepted besides the daemon's own (e.g. a dev server)."""


ENGINE: web.AppKey[Engine] = web.AppKey("engine", Engine)
SETTINGS: web.AppKey[ServerSettings] = web.AppKey("settings", ServerSettings)
HUB: web.AppKey[Hub] = web.AppKey("hub", Hub)
COSTS: web.AppKey[CostCache] = web.AppKey("costs", CostCache)
