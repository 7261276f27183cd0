"""Start a debate run or reopen one from its saved state; shared by the SSE endpoint and the CLI."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from dominds.driver.conductor import ConductorRun
from dominds.driver.engine import Engine, EngineError
from dominds.store.errors import DialogNotFoundError
from dominds.workflows.debate.agents import clip
from dominds.workflows.debate.embedders import make_embedder
from dominds.workflows.debate.members import ensure_members
from dominds.workflows.debate.protocol import HOST_MEMBER_ID, WORKFLOW
from dominds.workflows.debate.session import ACTIVE_SESSIONS, DebateSession, Emit
from dominds.workflows.debate.settings import MAX_ROUNDS_CAP, DebateSettings, load_settings
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.state import DebateState, DebateStateError, load_state, save_state

MAX_QUESTION_CHARS = 10_000
"""A longer question is refused: it would go to every agent in every round (§10.2 bounds each output at
2,000 tokens; a question many times that would crowd out the debate itself)."""


class DebateRequestError(Exception):
    """A start or resume request that cannot be served; ``status`` is the HTTP status it maps to."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def build_comparer(engine: Engine, settings: DebateSettings) -> tuple[PositionComparer, str | None]:
    """The comparer over the configured embedder, and why that embedder is not used (``None`` when it is)."""
    embedder, note = make_embedder(settings.embedder, engine.config.get().catalog)
    return PositionComparer(embedder, overlap_chosen=settings.embedder.kind == "jaccard"), note


async def open_debate(
    engine: Engine,
    *,
    emit: Emit,
    question: str | None = None,
    resume_id: str | None = None,
    max_rounds: int | None = None,
    settings: DebateSettings | None = None,
    comparer: PositionComparer | None = None,
) -> DebateSession:
    """A session ready to ``run_to_end``: a new run for ``question``, or the saved run ``resume_id``.

    ``comparer`` replaces the configured embedder (tests; a caller that holds a loaded model); the caller
    closes it. The one built here is closed when the session's run ends.
    """
    ensure_members(engine)
    settings = settings or load_settings(engine.rtws)
    if max_rounds is not None:
        if not 1 <= max_rounds <= MAX_ROUNDS_CAP:
            raise DebateRequestError(f"maxRounds must be 1..{MAX_ROUNDS_CAP} (seed §10.3)")
        settings = replace(settings, max_rounds=max_rounds)
    embedder_problem = None
    owns_comparer = comparer is None
    if comparer is None:  # loading a model reads files for a moment: not on the event loop
        built, embedder_problem = await asyncio.to_thread(build_comparer, engine, settings)
        comparer = built
    warnings = (*settings.problems, *([embedder_problem] if embedder_problem else []))
    if resume_id:
        run, state = await _reopen(engine, resume_id)
        resumed_from: int | None = state.current_round
    else:
        text = (question or "").strip()
        if not text:
            raise DebateRequestError("the question (message) is empty")
        if len(text) > MAX_QUESTION_CHARS:
            raise DebateRequestError(
                f"the question is {len(text):,} characters; at most {MAX_QUESTION_CHARS:,} are accepted "
                "(it goes to every agent in every round): put the material in a file of the workspace and ask about it"
            )
        try:
            run = engine.start_workflow_run(WORKFLOW, HOST_MEMBER_ID, settings.taskdoc, clip(text, 80))
        except EngineError as exc:
            raise DebateRequestError(str(exc), 409) from exc
        state = DebateState(session_id=run.root_id, user_query=text, max_rounds=settings.max_rounds)
        save_state(run.root.files.dir, state)
        resumed_from = None
    state.similarity_method, state.similarity_note = comparer.method, embedder_problem
    save_state(run.root.files.dir, state)
    return DebateSession(
        run, state, settings, comparer, emit=emit, resumed_from_round=resumed_from, warnings=warnings, owns_comparer=owns_comparer
    )


async def _reopen(engine: Engine, session_id: str) -> tuple[ConductorRun, DebateState]:
    if session_id in ACTIVE_SESSIONS:
        raise DebateRequestError(f"debate {session_id} is already running", 409)
    try:
        root = engine.load_root(session_id)
    except DialogNotFoundError as exc:
        raise DebateRequestError(f"no debate {session_id!r} in this workspace", 404) from exc
    if root.meta.conductor != WORKFLOW:
        raise DebateRequestError(f"dialog {session_id} is not a debate run", 404)
    if root.status != "run":
        raise DebateRequestError(f"debate {session_id} is in {root.status}/; move it back to run/ first", 409)
    try:
        state = load_state(root.files.dir)
    except DebateStateError as exc:
        raise DebateRequestError(str(exc), 409) from exc
    if state.finished:
        raise DebateRequestError(f"debate {session_id} already {state.status}; nothing to resume", 409)
    # Steps of the interrupted round may still be pending (or revived by the restart): they would only
    # spend tokens on answers nobody waits for. The round is re-run from its start.
    for entry in list(root.pending):
        sub = engine.try_get_dialog(root.root_id, entry.subdialog_id)
        if sub is not None and not sub.is_dead:
            await engine.declare_dead(sub, "the debate was resumed; this step is asked again")
    return ConductorRun(engine, root), state
