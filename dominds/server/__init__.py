"""The daemon's web side: aiohttp app, websocket protocol, JSON API and the static panel.

Public surface: ``make_app`` (an ``aiohttp.web.Application`` over a started engine) and
``run_server`` (start the engine, bind, serve, shut down gracefully). The wire protocol is
documented in docs/protocol.md. They are imported on first use (PEP 562), so importing a light
module of this package (listen.py) does not load the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dominds.server.app import make_app
    from dominds.server.run import ServerError, panel_url, run_server

__all__ = ["ServerError", "make_app", "panel_url", "run_server"]


def __getattr__(name: str) -> Any:
    if name == "make_app":
        from dominds.server.app import make_app

        return make_app
    if name in ("ServerError", "panel_url", "run_server"):
        from dominds.server import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
