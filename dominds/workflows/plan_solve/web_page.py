"""The Plan & Solve page (``GET /plan-solve``) and the small HTTP API it uses besides the websocket.

- ``GET /plan-solve``: the page (static/plan-solve.html; no build step, nothing from a CDN). It runs a
  question over ``/plan-solve/ws``, shows the plan for confirmation and editing, each slide's progress
  and queries with cancel/restart, and the finished deck.
- ``GET /api/plan-solve/runs``: the workspace's newest ``RUNS_SHOWN`` runs, newest first, also those
  from before a restart: ``{"runs": [{"run_id", ...run record}]}``. They are the root dialogs holding a
  ``plan-solve-run.json``, found by walking the store's root listing newest first
  (workflows/run_roots.py), not from memory.
- ``GET /api/plan-solve/runs/{run_id}``: one run's record (any run of the workspace, also older ones).
  In both, a record that says ``running`` while no live run of this service drives it (a crash or a kill
  cut it) reads ``interrupted``.
- ``GET /api/plan-solve/runs/{run_id}/deck.pptx`` and ``…/deck.json``: the deck's files, as downloads.

In ``dominds serve`` the daemon's guard protects ``/api/*`` (the page's requests carry the session cookie
set when the panel was opened with ``?auth=``); the standalone service has no guard, so the handlers
check the token themselves. A deck is served only from inside the service's output root.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import web

from dominds.server import keys
from dominds.server.auth import host_header_is_loopback, request_authorized
from dominds.store.errors import StoreError
from dominds.workflows import run_roots
from dominds.workflows.plan_solve import run_record
from dominds.workflows.plan_solve.session import PlanSolveService

STATIC_DIR = Path(__file__).resolve().parent / "static"
PAGE_PATH = "/plan-solve"
RUNS_SHOWN = 50


def add_page_routes(app: web.Application, service_key: web.AppKey[PlanSolveService]) -> None:
    async def list_runs(request: web.Request) -> web.Response:
        _check(request)
        service = request.app[service_key]
        runs = await asyncio.to_thread(_newest_records, service)
        live = service.live_run_ids()  # after the read: a run stays live until its end record is written
        return web.json_response({"runs": [_shown(run_id, record, live) for run_id, record in runs]})

    async def get_run(request: web.Request) -> web.Response:
        _check(request)
        run_id = request.match_info["run_id"]
        record = await _record(request.app[service_key], run_id)
        if record is None:
            return _error(404, f"no Plan & Solve run {run_id!r}")
        return web.json_response(_shown(run_id, record, request.app[service_key].live_run_ids()))

    async def deck(request: web.Request) -> web.StreamResponse:
        _check(request)
        service = request.app[service_key]
        run_id, kind = request.match_info["run_id"], request.match_info["kind"]
        record = await _record(service, run_id)
        if record is None or record.deck is None:
            return _error(404, f"run {run_id!r} has no deck (yet)")
        shown = record.deck.pptx if kind == "pptx" else record.deck.json_path
        path = run_record.resolve_shown(shown, service.workspace_root).resolve()
        if not path.is_relative_to(service.ppt_root().resolve()) or not path.is_file():
            return _error(404, f"the deck of run {run_id!r} is no longer in the output folder")
        name = f"plan-solve-{run_id}.{kind}"
        return web.FileResponse(path, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    app.router.add_get(PAGE_PATH, page)
    app.router.add_static(f"{PAGE_PATH}/static/", STATIC_DIR, append_version=False)
    app.router.add_get("/api/plan-solve/runs", list_runs)
    app.router.add_get("/api/plan-solve/runs/{run_id}", get_run)
    app.router.add_get("/api/plan-solve/runs/{run_id}/deck.{kind:pptx|json}", deck)


async def page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "plan-solve.html", headers={"Cache-Control": "no-cache"})


def _check(request: web.Request) -> None:
    """The standalone app has no guard middleware: answer only what the daemon's guard would."""
    token = request.app[keys.SETTINGS].token
    if token is None and not host_header_is_loopback(request):
        raise web.HTTPForbidden(text='{"error": "without a token only loopback host names are answered"}', content_type="application/json")
    if token is not None and not request_authorized(request, token):
        raise web.HTTPUnauthorized(text='{"error": "unauthorized"}', content_type="application/json", headers={"WWW-Authenticate": "Bearer"})


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _shown(run_id: str, record: run_record.RunRecord, live: set[str]) -> dict[str, object]:
    shown = {"run_id": run_id, **record.model_dump(mode="json", by_alias=False)}
    shown["status"] = run_roots.shown_status(record.status, run_id, live)
    return shown


def _newest_records(service: PlanSolveService) -> list[tuple[str, run_record.RunRecord]]:
    """The newest runs' records (an unreadable record is left out: ``GET …/runs/{id}`` says why not)."""
    return run_roots.newest_run_records(
        service.engine.store, run_record.RUN_FILE, RUNS_SHOWN, run_record.load, run_record.RunRecordError
    )


async def _record(service: PlanSolveService, run_id: str) -> run_record.RunRecord | None:
    """The run's record, found from the directory layout alone (no dialog is loaded)."""
    store = service.engine.store
    try:
        folder = store.files(store.locate_root(run_id), run_id).dir
    except (StoreError, ValueError):
        return None
    try:
        return await asyncio.to_thread(run_record.load, folder)
    except run_record.RunRecordError:
        return None
