"""HTTP routes of the ToT workflow, mounted into the daemon's app by ``add_routes``.

- ``POST /api/tot/runs`` ``{problem, taskType?, strategy?, depth?, branching?, threshold?, candidates?,
  symbolic?}`` starts a run in the background → ``201 {runId, rootId, status, page}``.
- ``GET /api/tot/runs`` lists the workspace's runs, the newest ``RUNS_SHOWN`` (oldest first):
  ``{"runs": [{runId, rootId, problem, status}]}``; ``GET /api/tot/runs/{id}`` is one run's snapshot:
  status, settings, per-layer reports and the seed's ThoughtTree with scores and pruned nodes.
  Runs in progress come from this daemon's memory, every other run from its ``tot-run.json``
  (run_file.py), so runs from before a restart or a crash are listed and shown too; a record left
  ``running`` by a process that stopped reads ``interrupted`` (workflows/run_roots.py).
- ``POST /api/tot/runs/{id}/cancel`` cancels a running run (its current teammate subdialog is declared
  dead); a run this daemon does not drive answers 409.
- ``POST /api/tot/runs/{id}/resume`` goes on with an interrupted run (its process stopped or crashed) as
  a new run that reuses its tree → ``201 {runId, rootId, status, page, resumedFrom}``; 404 for an unknown
  run, 409 for one that is not interrupted or was resumed already (``runner.resume_tot_run``).
- ``GET /tot`` is the page that draws the tree live (static/tot.html; no build step, nothing from a CDN).

The app's guard middleware applies the token and Origin checks to ``/api/`` as for every other route.
Events also go out on the main ``/ws`` as global ``tot_tree_evt`` messages (see runner.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from dominds.driver.engine import Engine, EngineError
from dominds.server import keys
from dominds.store.errors import StoreError
from dominds.workflows import run_roots
from dominds.workflows.tot import run_file
from dominds.workflows.tot.orchestrator import TotRequest
from dominds.workflows.tot.roles import ensure_role_members
from dominds.workflows.tot.runner import (
    NotResumable,
    TotRunRegistry,
    logs_root,
    resume_tot_run,
    start_tot_run,
)
from dominds.workflows.tot.settings import SearchOverrides, SettingsError

STATIC_DIR = Path(__file__).resolve().parent / "static"
TOT_RUNS: web.AppKey[TotRunRegistry] = web.AppKey("tot_runs", TotRunRegistry)
RUNS_SHOWN = 50
"""Runs ``GET /api/tot/runs`` lists: the newest."""


class StartRunBody(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    problem: str
    """Empty and over-long problems are refused by ``check_request``, in the words `dominds tot` uses."""
    taskType: str | None = None
    strategy: Literal["BFS", "DFS"] | None = None
    depth: int | None = None
    branching: int | None = None
    threshold: float | None = None
    candidates: int | None = None
    symbolic: bool = False
    """Answer with the symbolic Game-24 pair instead of teammates (offline; Game-24 problems only)."""


def add_routes(app: web.Application) -> None:
    """Mount the ToT routes; the app must already hold its engine (``app[keys.ENGINE]``)."""
    ensure_role_members(app[keys.ENGINE])
    app[TOT_RUNS] = TotRunRegistry()
    app.router.add_post("/api/tot/runs", start_run)
    app.router.add_get("/api/tot/runs", list_runs)
    app.router.add_get("/api/tot/runs/{run_id}", get_run)
    app.router.add_post("/api/tot/runs/{run_id}/cancel", cancel_run)
    app.router.add_post("/api/tot/runs/{run_id}/resume", resume_run)
    app.router.add_get("/tot", page)
    app.router.add_static("/tot/static/", STATIC_DIR, append_version=False)

    async def cancel_runs(app: web.Application) -> None:
        await app[TOT_RUNS].cancel_all()

    app.on_shutdown.append(cancel_runs)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def start_run(request: web.Request) -> web.Response:
    try:
        raw = await request.json()
    except ValueError:
        return _error(400, "the request body is not valid JSON")
    try:
        body = StartRunBody.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        return _error(400, f"`{'.'.join(str(p) for p in first['loc']) or 'body'}`: {first['msg']}")
    overrides = SearchOverrides(
        strategy=body.strategy, max_depth=body.depth, branching_factor=body.branching,
        pruning_threshold=body.threshold, num_candidates=body.candidates,
    )  # fmt: skip
    try:
        live = start_tot_run(
            request.app[keys.ENGINE],
            TotRequest(body.problem, body.taskType, overrides),
            symbolic=body.symbolic,
            registry=request.app[TOT_RUNS],
        )
    except SettingsError as exc:
        return _error(400, str(exc))
    except EngineError as exc:
        return _error(409, str(exc))
    return web.json_response({**live.summary(), "page": f"/tot?run={live.task_id}"}, status=201)


async def list_runs(request: web.Request) -> web.Response:
    registry, engine = request.app[TOT_RUNS], request.app[keys.ENGINE]
    stored = await asyncio.to_thread(_newest_records, engine)
    # Who is live is asked only now, after the files were read: a run leaves the registry once its end
    # is on disk, so one read as running that is no longer live either ended meanwhile (read it again)
    # or was cut by a stopped process (interrupted).
    ended = [r.run_id for r in stored if r.status == "running" and r.run_id not in registry.runs]
    again = await asyncio.to_thread(lambda: {run_id: stored_run(engine, run_id) for run_id in ended}) if ended else {}
    runs = {r.run_id: (again.get(r.run_id) or _shown(r, set())).summary() for r in stored if r.run_id not in registry.runs}
    runs.update((run_id, live.summary()) for run_id, live in registry.runs.items())  # live runs: their state now
    newest = sorted(runs.values(), key=lambda run: str(run["rootId"]))[-RUNS_SHOWN:]  # root ids sort by creation time
    return web.json_response({"runs": newest})


async def get_run(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    live = request.app[TOT_RUNS].get(run_id)
    if live is not None:
        return web.json_response(live.snapshot())
    record = await asyncio.to_thread(stored_run, request.app[keys.ENGINE], run_id)
    if record is None:
        return _error(404, f"no ToT run {run_id!r} in this workspace")
    return web.json_response(record.snapshot())


async def cancel_run(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    live = request.app[TOT_RUNS].get(run_id)
    if live is None:
        record = await asyncio.to_thread(stored_run, request.app[keys.ENGINE], run_id)
        if record is None:
            return _error(404, f"no ToT run {run_id!r} in this workspace")
        return _error(409, f"ToT run {run_id!r} is not running in this daemon (it is {record.status})")
    if live.task is not None and not live.task.done():
        live.task.cancel()
        await asyncio.wait([live.task], timeout=5)  # so the reply can already say "cancelled"
    return web.json_response(live.summary())


async def resume_run(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    registry = request.app[TOT_RUNS]
    live = registry.get(run_id)
    if live is not None:
        return _error(409, f"ToT run {run_id!r} is {live.status} in this daemon: only an interrupted run can be resumed")
    engine = request.app[keys.ENGINE]
    record = await asyncio.to_thread(stored_run, engine, run_id)
    if record is None:
        return _error(404, f"no ToT run {run_id!r} in this workspace")
    try:
        resumed = resume_tot_run(engine, record, record.status, registry=registry)
    except NotResumable as exc:
        return _error(409, str(exc))
    except SettingsError as exc:
        return _error(400, str(exc))
    except EngineError as exc:
        return _error(409, str(exc))
    return web.json_response({**resumed.summary(), "page": f"/tot?run={resumed.task_id}", "resumedFrom": run_id}, status=201)


def _shown(record: run_file.TotRunFile, live: set[str]) -> run_file.TotRunFile:
    record.status = run_roots.shown_status(record.status, record.run_id, live)
    return record


def stored_run(engine: Engine, run_id: str) -> run_file.TotRunFile | None:
    """A run from its files: the log folder's task info names the root, whose tot-run.json has the snapshot."""
    root_id = run_file.root_of_run(logs_root(engine), run_id)
    if root_id is None:  # no task info to point at it (its log folder could not be written): the newest runs
        return next((_shown(r, set()) for r in _newest_records(engine) if r.run_id == run_id), None)
    try:
        record = run_file.load(engine.store.root_dir(engine.store.locate_root(root_id), root_id))
    except (run_file.RunFileError, StoreError, ValueError):
        return None
    return _shown(record, set()) if record.run_id == run_id else None


def _newest_records(engine: Engine) -> list[run_file.TotRunFile]:
    found = run_roots.newest_run_records(engine.store, run_file.RUN_FILE, RUNS_SHOWN, run_file.load, run_file.RunFileError)
    return [record for _root_id, record in found]


async def page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "tot.html", headers={"Cache-Control": "no-cache"})
