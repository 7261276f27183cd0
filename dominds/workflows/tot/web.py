"""HTTP routes of the ToT workflow, mounted into the daemon's app by ``add_routes``.

- ``POST /api/tot/runs`` ``{problem, taskType?, strategy?, depth?, branching?, threshold?, candidates?,
  symbolic?}`` starts a run in the background → ``201 {runId, rootId, status, page}``.
- ``GET /api/tot/runs`` lists the runs of this daemon; ``GET /api/tot/runs/{id}`` is one run's snapshot:
  status, settings, per-layer reports and the seed's ThoughtTree with scores and pruned nodes.
- ``POST /api/tot/runs/{id}/cancel`` cancels a running run (its current teammate subdialog is declared dead).
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

from dominds.driver.engine import EngineError
from dominds.server import keys
from dominds.workflows.tot.orchestrator import TotRequest
from dominds.workflows.tot.roles import ensure_role_members
from dominds.workflows.tot.runner import TotRunRegistry, start_tot_run
from dominds.workflows.tot.settings import SearchOverrides, SettingsError

STATIC_DIR = Path(__file__).resolve().parent / "static"
TOT_RUNS: web.AppKey[TotRunRegistry] = web.AppKey("tot_runs", TotRunRegistry)


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
    app.router.add_get("/tot", page)

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
    runs = request.app[TOT_RUNS].runs.values()
    return web.json_response({"runs": [run.summary() for run in runs]})


async def get_run(request: web.Request) -> web.Response:
    live = request.app[TOT_RUNS].get(request.match_info["run_id"])
    if live is None:
        return _error(404, f"no ToT run {request.match_info['run_id']!r} in this daemon")
    return web.json_response(live.snapshot())


async def cancel_run(request: web.Request) -> web.Response:
    live = request.app[TOT_RUNS].get(request.match_info["run_id"])
    if live is None:
        return _error(404, f"no ToT run {request.match_info['run_id']!r} in this daemon")
    if live.task is not None and not live.task.done():
        live.task.cancel()
        await asyncio.wait([live.task], timeout=5)  # so the reply can already say "cancelled"
    return web.json_response(live.summary())


async def page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "tot.html", headers={"Cache-Control": "no-cache"})
