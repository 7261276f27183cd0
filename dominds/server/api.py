"""The JSON HTTP API under ``/api/`` (for the panel and the CLI). Documented in docs/protocol.md.

JSON in, JSON out. A failure is ``{"error": "<one sentence>"}`` with a status: 400 bad input,
401 no or wrong token, 403 foreign Origin, 404 unknown dialog or question, 409 a request the engine
refuses in the current state (``EngineError``), 400 for a bad request (``EngineBadRequest``), 413 body too large, 500 a bug.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dominds.driver.engine import Engine
from dominds.driver.fork import fork_root_off_loop
from dominds.server import demo_prompts, keys
from dominds.server.guard import ApiError
from dominds.server.listing import dialog_tree
from dominds.server.replay import course_records_off_loop, replay_page
from dominds.server.taskdoc_view import SectionConflict, write_section_checked
from dominds.server.timeline import tree_timeline
from dominds.server.views import dialog_summary, resolve_dialog, taskdoc_payload, team_payload
from dominds.store.commit import durable
from dominds.taskdoc_discovery import discover_taskdocs
from dominds.textcheck import lone_surrogate_at, lone_surrogate_problem


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", defer_build=True)  # built on first use, as messages.py


class CreateDialogBody(_Body):
    agentId: Annotated[str, Field(min_length=1)] | None = None
    taskDocPath: Annotated[str, Field(min_length=1)]


class MessageBody(_Body):
    content: str
    msgId: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class TitleBody(_Body):
    title: Annotated[str, Field(max_length=1000)]


class SectionBody(_Body):
    taskDocPath: Annotated[str, Field(min_length=1, max_length=1000)]
    section: Annotated[str, Field(min_length=1, max_length=300)]
    """``goals``, ``bearinmind/contracts`` or ``<category>/<selector>``."""
    content: Annotated[str, Field(max_length=512 * 1024)]
    baseHash: Annotated[str, Field(max_length=64)] | None = None
    """``hash`` of the section as the panel read it; a different current text is a conflict (409)."""


class DeadBody(_Body):
    note: str = ""


class ForkBody(_Body):
    genseq: Annotated[int, Field(ge=1)]
    """The generation to run anew in the fork (the fork holds everything recorded before it)."""
    course: Annotated[int, Field(ge=1)] | None = None
    """Its course (default: the dialog's current course)."""
    message: Annotated[str, Field(min_length=1, max_length=1024 * 1024)] | None = None
    """The fork's first message instead of the one that generation answered."""


class MoveBody(_Body):
    rootId: str
    toStatus: Literal["run", "done", "archive"]
    fromStatus: Literal["run", "done", "archive"] | None = None
    """When given, the move is refused unless the root is still there (guards a stale panel)."""


BodyT = TypeVar("BodyT", bound=_Body)


async def _body(request: web.Request, model: type[BodyT]) -> BodyT:
    if not request.can_read_body:
        raw: Any = {}
    else:
        try:
            raw = await request.json()
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the JSON decoder allows
            raise ApiError(400, "the request body is not valid JSON (or is nested too deeply)") from None
    if not isinstance(raw, dict):
        raise ApiError(400, "the request body must be a JSON object")
    where = lone_surrogate_at(raw)
    if where is not None:
        raise ApiError(400, lone_surrogate_problem(where))
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ApiError(400, f"`{where}`: {first['msg']}") from None


def _engine(request: web.Request) -> Engine:
    return request.app[keys.ENGINE]


async def create_dialog(request: web.Request) -> web.Response:
    body = await _body(request, CreateDialogBody)
    root = _engine(request).create_dialog(body.agentId, body.taskDocPath)
    return web.json_response(
        {
            "selfId": root.self_id,
            "rootId": root.root_id,
            "agentId": root.agent_id,
            "taskDocPath": root.meta.task_doc_path,
        },
        status=201,
    )


async def hierarchy(request: web.Request) -> web.Response:
    tree = await dialog_tree(_engine(request), request.match_info["root"])
    return web.json_response({"hierarchy": tree})


async def show_dialog(request: web.Request) -> web.Response:
    """A dialog's state and one page of one course (default: the current course's last page), as replay
    events; ``before``/``after`` (record indices) or ``aroundCall`` pick another page (paging)."""
    engine = _engine(request)
    dialog = await resolve_dialog(engine, request.match_info["self_id"], request.query.get("rootId"))
    course_text = request.query.get("course", str(dialog.latest.current_course))
    if not course_text.isdigit() or not 1 <= int(course_text) <= dialog.latest.current_course:
        raise ApiError(400, f"`course` must be between 1 and {dialog.latest.current_course}")
    where = {key: request.query[key] for key in ("before", "after", "aroundCall") if key in request.query}
    if len(where) > 1:
        raise ApiError(400, "give at most one of `before`, `after` and `aroundCall`")
    for key in ("before", "after"):
        if key in where and not where[key].isdigit():
            raise ApiError(400, f"`{key}` must be a record index (0 or more)")
    records = await course_records_off_loop(dialog, int(course_text))
    seq = engine.pubchan.last_seq(dialog.self_id)
    page = replay_page(
        dialog,
        int(course_text),
        epoch=engine.pubchan.epoch,
        seq=seq,
        before=int(where["before"]) if "before" in where else None,
        after=int(where["after"]) if "after" in where else None,
        around=where.get("aroundCall"),
        records=records,
    )
    return web.json_response(
        {
            **dialog_summary(engine, dialog),
            "epoch": engine.pubchan.epoch,
            "seq": seq,
            "course": page.course,
            "fromRecord": page.start,
            "toRecord": page.end,
            "totalRecords": page.total,
            "events": page.events,
        }
    )


async def post_message(request: web.Request) -> web.Response:
    body = await _body(request, MessageBody)
    engine = _engine(request)
    dialog = await resolve_dialog(engine, request.match_info["self_id"], request.query.get("rootId"))
    prompt = engine.submit_user_message(dialog, body.content, body.msgId)
    return web.json_response(
        {"selfId": dialog.self_id, "rootId": dialog.root_id, "msgId": prompt.msg_id}, status=202
    )


async def set_title(request: web.Request) -> web.Response:
    body = await _body(request, TitleBody)
    engine = _engine(request)
    dialog = await resolve_dialog(engine, request.match_info["self_id"], request.query.get("rootId"))
    title = engine.rename_dialog(dialog, body.title)
    return web.json_response({"selfId": dialog.self_id, "rootId": dialog.root_id, "title": title})


async def cancel_queued(request: web.Request) -> web.Response:
    engine = _engine(request)
    dialog = await resolve_dialog(engine, request.match_info["self_id"], request.query.get("rootId"))
    prompt = engine.cancel_queued_message(dialog, request.match_info["msg_id"])
    return web.json_response({"selfId": dialog.self_id, "rootId": dialog.root_id, "msgId": prompt.msg_id, "cancelled": True})


async def answer_question(request: web.Request) -> web.Response:
    body = await _body(request, MessageBody)
    question_id = request.match_info["question_id"]
    engine = _engine(request)
    elicitation = question_id in engine.waiting_answers  # its answer goes to an MCP server, not the dialog
    dialog = engine.answer_question(question_id, body.content, body.msgId)
    return web.json_response(
        {"questionId": question_id, "selfId": dialog.self_id, "rootId": dialog.root_id, "queued": not elicitation},
        status=202,
    )


async def list_questions(request: web.Request) -> web.Response:
    return web.json_response({"questions": _engine(request).q4h_state()})


async def run_control(request: web.Request) -> web.Response:
    engine = _engine(request)
    dialog = await resolve_dialog(engine, request.match_info["self_id"], request.query.get("rootId"))
    action = request.match_info["action"]
    result: dict[str, Any] = {"selfId": dialog.self_id, "rootId": dialog.root_id}
    if action == "stop":
        result["stopped"] = engine.stop(dialog)
    elif action == "resume":
        result["resumed"] = engine.resume(dialog)
    else:  # dead
        body = await _body(request, DeadBody)
        await engine.declare_dead(dialog, body.note)
    result["runState"] = dialog.latest.run_state.to_disk()
    return web.json_response(result)


async def fork_dialog(request: web.Request) -> web.Response:
    """A new main dialog holding the original's history before a generation, which it runs anew (driver/fork.py)."""
    body = await _body(request, ForkBody)
    engine = _engine(request)
    dialog = await resolve_dialog(engine, request.match_info["self_id"], request.query.get("rootId"))
    if not dialog.is_root:
        raise ApiError(400, f"dialog {dialog.self_id} is a subdialog; only a main dialog can be forked")
    fork = await fork_root_off_loop(engine, dialog.root_id, genseq=body.genseq, course=body.course, message=body.message)
    origin = fork.meta.forked_from
    assert origin is not None
    return web.json_response(
        {"selfId": fork.self_id, "rootId": fork.root_id, "agentId": fork.agent_id, "forkedFrom": origin.to_disk()},
        status=201,
    )


async def move_dialog(request: web.Request) -> web.Response:
    body = await _body(request, MoveBody)
    engine = _engine(request)
    current = engine.store.locate_root(body.rootId)
    if body.fromStatus is not None and current != body.fromStatus:
        raise ApiError(409, f"dialog {body.rootId} is in {current}/, not {body.fromStatus}/")
    # the tree is read off the loop before it leaves run/ (moving settles it) and once it is back
    from_status = await engine.move_root_off_loop(body.rootId, body.toStatus)
    return web.json_response(
        {"movedRootIds": [body.rootId], "fromStatus": from_status, "toStatus": body.toStatus}
    )


async def resume_all(request: web.Request) -> web.Response:
    return web.json_response({"resumed": _engine(request).resume_all()})


async def emergency_stop(request: web.Request) -> web.Response:
    return web.json_response({"stopped": _engine(request).emergency_stop()})


async def timeline(request: web.Request) -> web.Response:
    """A tree's generations and tool calls on a time axis (server/timeline.py), read in a worker thread."""
    engine = _engine(request)
    await durable()
    return web.json_response(await asyncio.to_thread(tree_timeline, engine.store, request.match_info["root"]))


async def usage(request: web.Request) -> web.Response:
    await durable()  # read from the files, as the timeline
    return web.json_response(await _engine(request).usage_totals_off_loop(request.match_info["root"]))


async def team(request: web.Request) -> web.Response:
    return web.json_response(team_payload(_engine(request)))


async def write_taskdoc_section(request: web.Request) -> web.Response:
    """Replace one section file atomically, like ``change_mind`` or an editor's save (see taskdoc_view.py)."""
    body = await _body(request, SectionBody)
    engine = _engine(request)
    try:
        written = write_section_checked(engine.rtws.root, body.taskDocPath, body.section, body.content, body.baseHash)
    except SectionConflict as exc:
        # the section's text now and its hash: the panel shows what changed, and a save over it names this hash
        conflict = {"error": str(exc), "current": exc.current, "currentHash": exc.current_hash}
        return web.json_response(conflict, status=409)
    lang = "zh" if request.query.get("lang") == "zh" else "en"
    return web.json_response({"written": written, **taskdoc_payload(engine, body.taskDocPath, lang)})


async def taskdocs(request: web.Request) -> web.Response:
    # a workflow's own Taskdocs are no choice for a new dialog (taskdoc_discovery.WORKFLOW_MARKER)
    return web.json_response({"taskdocs": discover_taskdocs(_engine(request).rtws.root, workflow=False)})


async def problems(request: web.Request) -> web.Response:
    return web.json_response({"problems": _engine(request).problems_payload()})


def add_api_routes(app: web.Application) -> None:
    app.router.add_post("/api/dialogs", create_dialog)
    app.router.add_post("/api/dialogs/move", move_dialog)
    app.router.add_get("/api/dialogs/{root}/hierarchy", hierarchy)
    app.router.add_get("/api/dialogs/{root}/usage", usage)
    app.router.add_get("/api/dialogs/{root}/timeline", timeline)
    app.router.add_get("/api/dialogs/{self_id}", show_dialog)
    app.router.add_post("/api/dialogs/{self_id}/messages", post_message)
    app.router.add_delete("/api/dialogs/{self_id}/messages/{msg_id}", cancel_queued)
    app.router.add_post("/api/dialogs/{self_id}/title", set_title)
    app.router.add_post("/api/dialogs/{self_id}/fork", fork_dialog)
    app.router.add_post("/api/dialogs/{self_id}/{action:stop|resume|dead}", run_control)
    app.router.add_get("/api/q4h", list_questions)
    app.router.add_post("/api/q4h/{question_id}/answer", answer_question)
    app.router.add_post("/api/resume-all", resume_all)
    app.router.add_post("/api/emergency-stop", emergency_stop)
    app.router.add_get("/api/team", team)
    app.router.add_get("/api/taskdocs", taskdocs)
    app.router.add_post("/api/taskdocs/section", write_taskdoc_section)
    app.router.add_get("/api/problems", problems)
    app.router.add_get("/api/suggestions", demo_prompts.suggestions)
    app.router.add_get("/api/workflow-examples", demo_prompts.workflow_examples)
