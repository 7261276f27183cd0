"""What the model saw: ``GET /api/dialogs/{selfId}/requests/{genseq}`` and its ``/body``.

The first answers the view of ``driver/request_view.py`` (the record, the generation's figures, the body
parsed); ``/body`` answers the request body exactly as it was sent to the provider, byte for byte.
``?course=N`` picks a course (default: the current one). Both read the files in a worker thread.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from dominds.driver.engine import Engine
from dominds.driver.request_view import RequestNotFound, RequestView, request_view
from dominds.server import keys
from dominds.server.guard import ApiError
from dominds.store.commit import durable


async def _view(request: web.Request) -> RequestView:
    engine: Engine = request.app[keys.ENGINE]
    try:
        genseq = int(request.match_info["genseq"])
        course = int(request.query["course"]) if "course" in request.query else None
    except ValueError as exc:
        raise ApiError(400, "genseq and course are whole numbers") from exc
    self_id = request.match_info["self_id"]
    status, root_id = engine.store.locate_dialog(self_id)  # DialogNotFoundError → 404
    files = engine.store.files(status, root_id, self_id)
    catalog = engine.config.get().catalog
    await durable()  # the generation's writes so far are on disk
    try:
        return await asyncio.to_thread(request_view, files, genseq, course, catalog)
    except RequestNotFound as exc:
        raise ApiError(404, str(exc)) from exc


async def generation_request(request: web.Request) -> web.Response:
    return web.json_response((await _view(request)).view)


async def generation_request_body(request: web.Request) -> web.Response:
    return web.Response(
        body=(await _view(request)).body,
        content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"},
    )


def add_request_routes(app: web.Application) -> None:
    app.router.add_get(r"/api/dialogs/{self_id}/requests/{genseq:\d+}", generation_request)
    app.router.add_get(r"/api/dialogs/{self_id}/requests/{genseq:\d+}/body", generation_request_body)
