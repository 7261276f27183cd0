"""Questions for the human (``driver/questions.py``) through the engine's public calls: what is refused,
what is kept, what reaches the file and the panels. Each test names the mutant of a module-wide
``bin/mutate dominds.driver.questions`` sample it holds (docs/testing.md, "Mutation sampling")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dominds.driver.engine import Engine, EngineError
from dominds.driver.errors import EngineBadRequest

ASKS = [{"agent": "lead", "message": "paint", "response": "!?@human Which colour?\n"}]


async def _asked(make_engine: Any, responses: list[dict[str, Any]] | None = None) -> tuple[Engine, Any, dict[str, Any]]:
    engine = await make_engine(responses or ASKS)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "paint")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    return engine, root, question


async def test_an_answer_no_file_can_hold_is_refused_and_the_question_kept(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Mutant held: ``require_storable`` removed from ``answer`` (an answer with a lone UTF-16 surrogate
    was queued: the queue line cannot be encoded, and the question was dropped)."""
    engine, root, question = await _asked(make_engine)
    with pytest.raises(EngineBadRequest, match="content"):
        engine.answer_question(question["id"], "blue \ud800")
    assert [q["id"] for q in engine.q4h_state()] == [question["id"]], "the question is still pending"
    assert not root.queue and [q.id for q in root.files.read_q4h().questions] == [question["id"]]


async def test_an_answer_under_a_message_id_already_accepted_is_refused_and_the_question_kept(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Mutant held: ``refuse_duplicate`` removed from ``answer`` (a resent answer, or one reusing the id of
    the message that started the dialog, was queued a second time)."""
    engine = await make_engine(ASKS)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "paint", msg_id="m1")
    await engine.wait_idle()
    [question] = engine.q4h_state()
    with pytest.raises(EngineError, match="already accepted"):
        engine.answer_question(question["id"], "blue", msg_id="m1")
    assert [q["id"] for q in engine.q4h_state()] == [question["id"]] and not root.queue


async def _elicit(engine: Engine, root: Any, timeout_s: float = 60) -> tuple[asyncio.Task[str | None], dict[str, Any]]:
    """A question whose answer goes back to waiting code (as an MCP elicitation's), once it is asked."""
    asked = asyncio.Event()
    sub = engine.pubchan.subscribe(lambda e: asked.set() if e["type"] == "new_q4h_asked" else None, wants_all=True)
    try:
        task = asyncio.create_task(engine.ask_human_and_wait(root, "  @human Which colour?  ", " body \n", "call-1", timeout_s))
        await asyncio.wait_for(asked.wait(), 30)
    finally:
        engine.pubchan.unsubscribe(sub)
    [question] = engine.q4h_state()
    return task, question


async def test_an_answered_elicitation_is_gone_when_the_answer_call_returns(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Mutant held: ``withdraw`` removed from ``_settle_waiting`` (the question stayed in the panels and
    in ``q4h.yaml`` until the waiting code next ran: an answer acknowledged while its question still showed,
    and a crash in between kept a question whose answer had been given)."""
    engine = await make_engine([])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    task, question = await _elicit(engine, root)
    assert question["kind"] == "elicitation" and question["tellaskHead"] == "@human Which colour?"
    assert question["bodyContent"] == "body"
    engine.answer_question(question["id"], "  blue  ")
    assert engine.q4h_state() == [] and root.files.read_q4h().questions == []
    assert await asyncio.wait_for(task, 30) == "blue"


async def test_an_elicitation_points_at_the_last_record_and_is_withdrawn_when_its_wait_ends_unanswered(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Mutants held: ``max(len(records) - 1, 0)`` off by one either way in ``ask_and_wait`` (the question's
    call site named the record after the asking one, or record 1 of a course holding only its start record), and the wait's
    ``finally`` that withdraws a question nobody will answer (here: the calling tool was stopped)."""
    engine = await make_engine([{"agent": "lead", "message": "hi", "response": "Hello."}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    assert len(root.records) == 1, "only its course start"
    task, question = await _elicit(engine, root)
    assert question["callSiteRef"] == {"course": 1, "messageIndex": 0}, "a course of one record: that record"
    engine.answer_question(question["id"], "decline")
    assert await asyncio.wait_for(task, 30) is None, "declined"
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    count = len(root.records)
    assert count > 2
    task, question = await _elicit(engine, root)
    assert question["callSiteRef"] == {"course": 1, "messageIndex": count - 1}, "the last record asked it"
    task.cancel()  # the calling tool was stopped
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.q4h_state() == [] and root.files.read_q4h().questions == [] and not root.q4h


async def test_answering_a_question_tells_the_panels_the_new_count(make_engine) -> None:  # type: ignore[no-untyped-def]
    """Mutant held: ``_publish_count`` removed from ``withdraw`` (the panels' question badge kept counting an
    answered question until something else changed the count)."""
    engine, root, question = await _asked(make_engine)
    seen: list[dict[str, Any]] = []
    sub = engine.pubchan.subscribe(seen.append, wants_all=True)
    try:
        engine.answer_question(question["id"], "blue")
        await engine.wait_idle()
    finally:
        engine.pubchan.unsubscribe(sub)
    counts = [(e["previousCount"], e["questionCount"]) for e in seen if e["type"] == "questions_count_update"]
    assert counts[:1] == [(1, 0)], counts
    assert [e["questionId"] for e in seen if e["type"] == "q4h_answered"] == [question["id"]]
