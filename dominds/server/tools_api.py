"""``/api/tools`` (every toolset, its source and state) and the artifacts MCP tools saved in dialogs.

``GET /api/tools`` lists the built-in toolsets and the MCP servers of ``.minds/mcp.yaml`` with their
tools and the members that have them; ``?connect=1`` first starts the MCP servers that have not listed
their tools yet. ``GET /api/dialogs/<selfId>/artifacts/<name>`` serves an image or file an MCP tool
returned (see ``dominds/mcp/results.py``); ``POST /api/dialogs/<selfId>/artifacts`` stores an image a
user attaches to a message (the panel's composer, ``dominds tell --image``; the body is the image's bytes)
and answers the placeholder line to put in the message, which sends the image to a vision-capable model.
All sit behind the same token and Origin checks as the rest of ``/api``.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from typing import Any

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.ids import short_token
from dominds.mcp.results import ARTIFACT_NAME_RE, ARTIFACTS_DIR, artifact_url, save_artifact
from dominds.server import keys
from dominds.store.errors import StoreError
from dominds.team import expand_toolsets
from dominds.tools.control import CONTROL_TOOLS
from dominds.tools.pictures import MAX_PICTURE_BYTES, picture_type


def _engine(request: web.Request) -> Engine:
    engine: Engine = request.app[keys.ENGINE]
    return engine


def tools_payload(engine: Engine) -> dict[str, Any]:
    config = engine.config.get()
    mcp = engine.config.mcp
    available = [*config.toolsets.names(), *mcp.toolset_names()]
    users: dict[str, list[str]] = {name: [] for name in available}
    for member in config.team.visible_members():  # a shadow member (hidden) showed in every toolset's list
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
    files = engine.store.files(status, root_id, self_id)
    path = files.dir / ARTIFACTS_DIR / name
    try:
        files.check_real_directories()  # a link anywhere on the way is never followed
        info = os.lstat(path)
    except (StoreError, OSError) as exc:
        raise web.HTTPNotFound() from exc
    if not stat.S_ISREG(info.st_mode):  # a symlink served an outside file
        raise web.HTTPNotFound()
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return web.FileResponse(
        path, headers={"Content-Type": content_type, "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"}
    )


async def attach_image(request: web.Request) -> web.Response:
    """Store an attached image in the dialog's artifacts; answers ``{name, url, line}``."""
    engine = _engine(request)
    self_id = request.match_info["self_id"]
    status, root_id = engine.store.locate_dialog(self_id)  # DialogNotFoundError → 404
    raw = await _read_at_most(request, MAX_PICTURE_BYTES + 1)  # not request.read(): the API's 1 MiB body cap
    if len(raw) > MAX_PICTURE_BYTES:
        return _refuse(413, f"the image is larger than {MAX_PICTURE_BYTES // (1024 * 1024)} MiB")
    mime = picture_type(raw[:16])
    if mime is None:
        return _refuse(415, "the body is not a PNG, JPEG, GIF or WebP image")
    dialog_dir = engine.store.files(status, root_id, self_id).dir
    line = save_artifact(dialog_dir, self_id, f"upload-{short_token(8)}", raw, mime, source="the user")
    name = line.split(" ", 5)[4]
    return web.json_response({"name": name, "url": artifact_url(self_id, name), "line": line}, status=201)


async def _read_at_most(request: web.Request, limit: int) -> bytes:
    """The body, or its first ``limit`` bytes when it is longer (the rest is never buffered)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await request.content.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _refuse(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def tools_page(request: web.Request) -> web.StreamResponse:
    """``/tools``: the Tools view lives at ``/static/tools.html`` (``/tools`` was a 404)."""
    raise web.HTTPFound(request.rel_url.with_path("/static/tools.html").with_query(request.rel_url.query))


def add_tools_routes(app: web.Application) -> None:
    app.router.add_get("/tools", tools_page)
    app.router.add_get("/api/tools", list_tools)
    app.router.add_get("/api/dialogs/{self_id}/artifacts/{name}", artifact)
    app.router.add_post("/api/dialogs/{self_id}/artifacts", attach_image)
