"""``/api/tools`` (every toolset, its source and state) and the artifacts MCP tools saved in dialogs.

``GET /api/tools`` lists the built-in toolsets and the MCP servers of ``.minds/mcp.yaml`` with their
tools and the members that have them; ``?connect=1`` first starts the MCP servers that have not listed
their tools yet. ``GET /api/dialogs/<selfId>/artifacts/<name>`` serves an image or file an MCP tool
returned (see ``dominds/mcp/results.py``); both sit behind the same token and Origin checks as the
rest of ``/api``.
"""

from __future__ import annotations

import mimetypes
from typing import Any

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.mcp.results import ARTIFACT_NAME_RE, ARTIFACTS_DIR
from dominds.server import keys
from dominds.team import expand_toolsets
from dominds.tools.control import CONTROL_TOOLS


def _engine(request: web.Request) -> Engine:
    engine: Engine = request.app[keys.ENGINE]
    return engine


def tools_payload(engine: Engine) -> dict[str, Any]:
    config = engine.config.get()
    mcp = engine.config.mcp
    available = [*config.toolsets.names(), *mcp.toolset_names()]
    users: dict[str, list[str]] = {name: [] for name in available}
    for member in config.team.members.values():
        for name in expand_toolsets(member.toolsets, available):
            users[name].append(member.id)

    def tool_list(tools: list[Any]) -> list[dict[str, str]]:
        return [{"name": t.name, "description": t.description} for t in tools]

    toolsets: list[dict[str, Any]] = [
        {"name": "(intrinsic)", "source": "built-in", "state": "ready", "members": ["*"], "tools": tool_list(CONTROL_TOOLS)}
    ]
    for name in config.toolsets.names():
        toolsets.append(
            {"name": name, "source": "built-in", "state": "ready", "members": users[name], "tools": tool_list(config.toolsets.get(name) or [])}
        )
    for server in mcp.describe():
        toolsets.append({**server, "members": users.get(server["name"], [])})
    return {"toolsets": toolsets}


async def list_tools(request: web.Request) -> web.Response:
    engine = _engine(request)
    engine.config.get()  # picks up a changed mcp.yaml
    if request.query.get("connect") in ("1", "true"):
        await engine.config.mcp.discover_all()
    return web.json_response(tools_payload(engine))


async def artifact(request: web.Request) -> web.StreamResponse:
    engine = _engine(request)
    name = request.match_info["name"]
    if not ARTIFACT_NAME_RE.fullmatch(name):
        raise web.HTTPNotFound()
    self_id = request.match_info["self_id"]
    status, root_id = engine.store.locate_dialog(self_id)
    path = engine.store.files(status, root_id, self_id).dir / ARTIFACTS_DIR / name
    if not path.is_file():
        raise web.HTTPNotFound()
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return web.FileResponse(
        path, headers={"Content-Type": content_type, "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"}
    )


async def tools_page(request: web.Request) -> web.StreamResponse:
    """``/tools``: the Tools view lives at ``/static/tools.html`` (``/tools`` was a 404)."""
    raise web.HTTPFound(request.rel_url.with_path("/static/tools.html").with_query(request.rel_url.query))


def add_tools_routes(app: web.Application) -> None:
    app.router.add_get("/tools", tools_page)
    app.router.add_get("/api/tools", list_tools)
    app.router.add_get("/api/dialogs/{self_id}/artifacts/{name}", artifact)
