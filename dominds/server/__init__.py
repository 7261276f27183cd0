"""The daemon's web side: aiohttp app, websocket protocol, JSON API and the static panel.

Public surface: ``make_app`` (an ``aiohttp.web.Application`` over a started engine) and
``run_server`` (start the engine, bind, serve, shut down gracefully). The wire protocol is
documented in docs/protocol.md.
"""

from dominds.server.app import make_app
from dominds.server.run import ServerError, panel_url, run_server

__all__ = ["ServerError", "make_app", "panel_url", "run_server"]
