"""HTTP edge of the debate: ``POST /api/multi-agent`` (SSE), stop and state endpoints, the ``/debate`` page.

``POST /api/multi-agent`` with ``{"message": "…", "mode": "multi_agent", "maxRounds": 5}`` starts a
run; ``{"sessionId": "<id>"}`` resumes one from its last completed round. The answer is
``text/event-stream``: one ``data: {json}`` frame per event (events.py), a ``: keep-alive`` comment
when nothing was sent for ``keepalive_s``, and ``data: [DONE]`` at the end. Errors found before the
stream starts are JSON (400 bad body, 404 unknown session, 409 not resumable).

``GET /api/multi-agent`` lists the workspace's newest debates, newest first, from their files
(``saved.py``): ``{"sessions": [{sessionId, question, status, currentRound, maxRounds, createdAt,
updatedAt, running, resumable}]}``. ``GET /api/multi-agent/{sessionId}`` is the saved §4 state (agent statuses as they are now) with
``running`` and ``resumable``; ``GET /api/multi-agent/{sessionId}/session`` is the §6.2
``multi_agent_session`` object (view.py). A state saved ``in_progress`` that no live run drives (its
process was killed or crashed) is shown ``interrupted`` with ``stop_reason: process_ended``
(``state.as_shown``): derived when read, as for the other workflows (workflows/run_roots.py).

A client that disconnects stops the run (it is saved as ``interrupted``; resume it with its
``sessionId``); so does ``POST /api/multi-agent/{sessionId}/stop``. Browsers cannot POST with
``EventSource``: the page uses ``fetch`` and reads the body as a stream.

The app's guard middleware protects ``/api/*``; ``/debate`` is a static page that asks for the token
like the main panel does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dominds.server import keys
from dominds.store.errors import DialogNotFoundError
from dominds.workflows.debate import saved
from dominds.workflows.debate.launch import DebateRequestError, open_debate
from dominds.workflows.debate.session import ACTIVE_SESSIONS
from dominds.workflows.debate.settings import MAX_ROUNDS_CAP
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.state import DebateStateError, as_shown, load_state
from dominds.workflows.debate.view import session_object

STATIC_DIR = Path(__file__).resolve().parent / "static"
DISCONNECT_POLL_S = 0.2
"""How often the stream checks whether its client is still there (a run stops within about this)."""
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
DONE_FRAME = b"data: [DONE]\n\n"
KEEPALIVE_FRAME = b": keep-alive\n\n"

COMPARER_FACTORY: web.AppKey[Callable[[], PositionComparer]] = web.AppKey("debate_comparer_factory")
"""Optional: makes the comparer of each run instead of the configured embedder (tests, preloaded models)."""


class MultiAgentBody(BaseModel):
    """§6.1 request; ``sessionId`` (resume) and ``maxRounds`` are additions."""

    model_config = ConfigDict(extra="ignore")
    message: str = ""
    mode: str = "multi_agent"
    userId: str | None = None
    conversationId: str | None = None
    sessionId: str | None = Field(default=None, min_length=1, max_length=200)
    maxRounds: int | None = Field(default=None, ge=1, le=MAX_ROUNDS_CAP)


def sse_frame(event: dict[str, Any]) -> bytes:
    # json.dumps escapes newlines, so every event is exactly one `data:` line
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def multi_agent(request: web.Request) -> web.StreamResponse:
    try:
        body = MultiAgentBody.model_validate(await request.json())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(400, "the body must be JSON")
    except ValidationError as exc:
        return _error(400, "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    if body.mode != "multi_agent":
        return _error(400, f"mode {body.mode!r} is not supported here; use \"multi_agent\"")
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    factory = request.app.get(COMPARER_FACTORY)
    try:
        session = await open_debate(
            request.app[keys.ENGINE],
            emit=queue.put_nowait,
            question=body.message,
            resume_id=body.sessionId,
            max_rounds=body.maxRounds,
            comparer=factory() if factory is not None else None,
        )
    except DebateRequestError as exc:
        return _error(exc.status, str(exc))
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    runner = asyncio.create_task(session.run_to_end(), name=f"debate-{session.session_id}")
    runner.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        await _pump(request, response, queue, session.settings.keepalive_s)
    finally:
        if not runner.done():
            session.stop("client_disconnected")
        with contextlib.suppress(asyncio.CancelledError):
            await runner  # the interrupted state is saved before this returns
    return response


async def _pump(
    request: web.Request, response: web.StreamResponse, queue: asyncio.Queue[dict[str, Any] | None], keepalive_s: float
) -> None:
    loop = asyncio.get_running_loop()
    last_write = loop.time()
    # One getter task kept across polls: in Python 3.11, wait_for(queue.get()) can drop an item that
    # arrives just as its timeout fires.
    getter: asyncio.Future[dict[str, Any] | None] | None = None
    try:
        while not _client_gone(request):
            getter = getter or asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter}, timeout=min(DISCONNECT_POLL_S, keepalive_s))
            if not done:
                if loop.time() - last_write >= keepalive_s:
                    await response.write(KEEPALIVE_FRAME)
                    last_write = loop.time()
                continue
            event, getter = getter.result(), None
            if event is None:
                await response.write(DONE_FRAME)
                return
            await response.write(sse_frame(event))
            last_write = loop.time()
    except ConnectionError:
        return  # the client went away between our check and the write
    finally:
        if getter is not None:
            getter.cancel()


async def stop_debate(request: web.Request) -> web.Response:
    session = ACTIVE_SESSIONS.get(request.match_info["session_id"])
    if session is None or not session.stop("user_stop"):
        return _error(404, "no running debate with this id")
    return web.json_response({"stopped": True, "sessionId": session.session_id})


async def list_debates(request: web.Request) -> web.Response:
    """The workspace's newest debates, newest first, read from their files (also from before a restart)."""
    engine = request.app[keys.ENGINE]
    states = await asyncio.to_thread(saved.newest_states, engine.store)
    return web.json_response({"sessions": [saved.summary(state, _driven_here(engine, state.session_id)) for state in states]})


async def debate_state(request: web.Request) -> web.Response:
    engine = request.app[keys.ENGINE]
    session_id = request.match_info["session_id"]
    try:
        root = engine.load_root(session_id)
        state = load_state(root.files.dir)
    except DialogNotFoundError:
        return _error(404, f"no debate {session_id!r}")
    except DebateStateError as exc:
        return _error(404, str(exc))
    running = _driven_here(engine, session_id)
    state = as_shown(state, running)
    return web.json_response({**state.to_json(), "running": running, "resumable": not running and not state.finished})


def _driven_here(engine: object, session_id: str) -> bool:
    session = ACTIVE_SESSIONS.get(session_id)
    return session is not None and session.run.engine is engine


async def debate_session_object(request: web.Request) -> web.Response:
    """The seed's §6.2 ``multi_agent_session`` object, with the outputs of a round still in progress."""
    engine = request.app[keys.ENGINE]
    session_id = request.match_info["session_id"]
    running = ACTIVE_SESSIONS.get(session_id)
    if running is not None and running.run.engine is engine:
        return web.json_response(session_object(running.state, running.live_outputs))
    try:
        state = load_state(engine.load_root(session_id).files.dir)
    except DialogNotFoundError:
        return _error(404, f"no debate {session_id!r}")
    except DebateStateError as exc:
        return _error(404, str(exc))
    return web.json_response(session_object(as_shown(state, _driven_here(engine, session_id))))


async def debate_page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "debate.html", headers={"Cache-Control": "no-cache"})


async def _stop_debates_on_shutdown(app: web.Application) -> None:
    # Without this a streaming debate would hold the shutdown for aiohttp's whole grace period; stopped,
    # it is saved as interrupted (resumable) and its stream ends with session_interrupted and [DONE].
    engine = app[keys.ENGINE]
    for session in list(ACTIVE_SESSIONS.values()):
        if session.run.engine is engine:
            session.stop("server_shutdown")


def add_routes(app: web.Application) -> None:
    """Mount the debate's endpoints and page on the daemon's app."""
    app.on_shutdown.append(_stop_debates_on_shutdown)
    app.router.add_post("/api/multi-agent", multi_agent)
    app.router.add_get("/api/multi-agent", list_debates)
    app.router.add_post("/api/multi-agent/{session_id}/stop", stop_debate)
    app.router.add_get("/api/multi-agent/{session_id}", debate_state)
    app.router.add_get("/api/multi-agent/{session_id}/session", debate_session_object)
    app.router.add_get("/debate", debate_page)
    app.router.add_static("/debate/static/", STATIC_DIR, append_version=False)
