"""The one owner of questions for the human (Q4H): asking, indexing, answering, withdrawing, clearing.

A question lives in its dialog's ``q4h.yaml`` and in the engine's index (questionId → dialog). Every
change is persisted first, then published (``new_q4h_asked``, ``q4h_answered``, ``questions_count_update``).
An answer is queued in the dialog before its question is dropped: a crash in between leaves a queued
answer whose question recovery removes, never a removed question without its answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.errors import EngineBadRequest, EngineError
from dominds.driver.intake import announce_queued, queue_durably, refuse_duplicate, require_storable
from dominds.driver.services import EngineServices
from dominds.ids import new_dialog_id, now_iso
from dominds.store.errors import StoreError
from dominds.store.records import CallSiteRef, DialogMeta, HumanQuestion, QueuedPrompt

DECLINE_WORDS = frozenset({"decline", "/decline", "拒绝"})
"""An answer of one of these words to an ``elicitation`` question declines it."""


def ask(engine: EngineServices, dialog: Dialog, question: HumanQuestion) -> None:
    """Record a new question (idempotent by id), index it and announce it."""
    if any(q.id == question.id for q in dialog.q4h):
        return
    previous = len(dialog.q4h)
    dialog.q4h.append(question)
    dialog.save_q4h()
    engine.q4h_index[question.id] = (dialog.root_id, dialog.self_id)
    dialog.publish({"type": "new_q4h_asked", "question": payload(dialog, question)})
    _publish_count(dialog, previous)


def answer(engine: EngineServices, question_id: str, content: str, msg_id: str | None = None) -> Dialog:
    where = engine.q4h_index.get(question_id)
    if where is None:
        raise EngineError(f"question {question_id!r} is not pending (already answered, cleared, or unknown)")
    dialog = engine.get_dialog(*where)
    # first: a dialog that cannot be loaded has no questions in memory, and "already answered" would both
    # mislead and drop from the index a question that is still on disk (answerable once the file is mended)
    engine.check_drivable_target(dialog)
    if not any(q.id == question_id for q in dialog.q4h):
        engine.q4h_index.pop(question_id, None)
        raise EngineError(f"question {question_id!r} is not pending (already answered)")
    if not content.strip():
        raise EngineBadRequest("the answer is empty")
    require_storable({"content": content, "msgId": msg_id})
    asked = next(q for q in dialog.q4h if q.id == question_id)
    if asked.kind == "elicitation":
        _settle_waiting(engine, dialog, question_id, content)
        return dialog
    if msg_id is not None:
        refuse_duplicate(dialog, msg_id)
    prompt = QueuedPrompt(
        msg_id=msg_id or f"ans-{new_dialog_id()}",
        content=content,
        origin="q4h_answer",
        question_id=question_id,
        queued_at=now_iso(),
    )
    queue_durably(engine, dialog, prompt)
    announce_queued(dialog, prompt)
    withdraw(engine, dialog, question_id)
    return dialog


def _settle_waiting(engine: EngineServices, dialog: Dialog, question_id: str, content: str) -> None:
    waiting = engine.waiting_answers.get(question_id)
    withdraw(engine, dialog, question_id)
    # Defensive, so an `or` → `and` mutant here survives sampling: the wait pops its waiter and withdraws
    # its question in one step, and index_all drops elicitations a restart left, so no waiter with the
    # question still pending is reachable; a settled one only when a Stop cancels the wait in the same
    # loop turn as the answer.
    if waiting is None or waiting.done():
        raise EngineError(f"question {question_id!r} is no longer awaited (the MCP request that asked it has ended)")
    waiting.set_result(None if content.strip().lower() in DECLINE_WORDS else content.strip())


async def ask_and_wait(
    engine: EngineServices, dialog: Dialog, head: str, body: str, call_id: str, timeout_s: float
) -> str | None:
    """Ask a question whose answer goes to the waiting code, not into the dialog (an MCP server's
    elicitation during a tool call); the answer, or ``None`` when declined or unanswered in time.
    The question is withdrawn however the wait ends (answered, timed out, cancelled)."""
    question = HumanQuestion(
        id=f"q4h-{dialog.self_id}-{call_id}-{new_dialog_id()}",
        tellask_head=head.strip(),
        body_content=body.strip(),
        asked_at=now_iso(),
        call_id=call_id,
        call_site_ref=CallSiteRef(course=dialog.latest.current_course, message_index=max(len(dialog.records) - 1, 0)),
        kind="elicitation",
    )
    waiting: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
    engine.waiting_answers[question.id] = waiting
    try:
        ask(engine, dialog, question)
        return await asyncio.wait_for(waiting, timeout_s)
    except TimeoutError:
        return None
    finally:
        engine.waiting_answers.pop(question.id, None)
        if any(q.id == question.id for q in dialog.q4h):
            withdraw(engine, dialog, question.id)


def withdraw(engine: EngineServices, dialog: Dialog, question_id: str) -> None:
    """Drop a question (answered, or its dialog was declared dead) from the file, the index and the panels."""
    previous = len(dialog.q4h)
    dialog.q4h = [q for q in dialog.q4h if q.id != question_id]
    dialog.save_q4h()
    engine.q4h_index.pop(question_id, None)
    dialog.publish({"type": "q4h_answered", "questionId": question_id, "selfId": dialog.self_id})
    _publish_count(dialog, previous)


def clear_all(engine: EngineServices, dialog: Dialog) -> None:
    """Drop every open question of the dialog: a new course (seed: clear_mind clears Q4H), or a dialog
    declared dead (recovery finishing ``run_control.declare_dead``)."""
    for question in list(dialog.q4h):
        engine.q4h_index.pop(question.id, None)
        dialog.publish({"type": "q4h_answered", "questionId": question.id, "selfId": dialog.self_id})
    dialog.q4h = []
    dialog.save_q4h()


def index_all(engine: EngineServices, dialog: Dialog) -> None:
    """Index a loaded dialog's questions; an elicitation nothing waits for (left by a restart) is dropped."""
    stale = [q for q in dialog.q4h if q.kind == "elicitation" and q.id not in engine.waiting_answers]
    if stale:
        dialog.q4h = [q for q in dialog.q4h if q not in stale]
        dialog.save_q4h()
    for question in dialog.q4h:
        engine.q4h_index[question.id] = (dialog.root_id, dialog.self_id)


def save_unsaved(engine: EngineServices, dialog: Dialog) -> None:
    """Questions a refused write left in memory only (``ask`` appends, then saves): saved, indexed and
    announced once the disk takes writes again (``storage_watch.py``). Nobody could answer them before."""
    unsaved = [q for q in dialog.q4h if q.id not in engine.q4h_index]
    if not unsaved:
        return
    dialog.save_q4h()
    for question in unsaved:
        engine.q4h_index[question.id] = (dialog.root_id, dialog.self_id)
        dialog.publish({"type": "new_q4h_asked", "question": payload(dialog, question)})
    _publish_count(dialog, len(dialog.q4h) - len(unsaved))


def unindex_all(engine: EngineServices, dialog: Dialog) -> None:
    for question in dialog.q4h:
        engine.q4h_index.pop(question.id, None)


def payload(dialog: Dialog, question: HumanQuestion) -> dict[str, Any]:
    return _payload(dialog.meta, question, dialog.root_id)


def _payload(meta: DialogMeta, question: HumanQuestion, root_id: str) -> dict[str, Any]:
    return {
        "id": question.id,
        "selfId": meta.id,
        "rootId": root_id,
        "agentId": meta.agent_id,
        "taskDocPath": meta.task_doc_path,
        "tellaskHead": question.tellask_head,
        "bodyContent": question.body_content,
        "askedAt": question.asked_at,
        "callId": question.call_id,
        "callSiteRef": question.call_site_ref.to_disk(),
        "kind": question.kind,
    }


def pending(engine: EngineServices) -> list[dict[str, Any]]:
    """Every pending question, in id order, as the panel and the CLI show it."""
    out = []
    for question_id, (root_id, self_id) in sorted(engine.q4h_index.items()):
        dialog = engine.find_loaded(self_id)
        if dialog is not None:
            meta, asked = dialog.meta, dialog.q4h
        else:  # read from its files: a dialog waiting for a person is not loaded for that (memory stays flat)
            try:
                files = engine.store.files("run", root_id, self_id)
                meta, asked = files.read_meta(), files.read_q4h().questions
            except StoreError:
                continue
        question = next((q for q in asked if q.id == question_id), None)
        if question is not None:
            out.append(_payload(meta, question, root_id))
    return out


def _publish_count(dialog: Dialog, previous: int) -> None:
    dialog.publish(
        {
            "type": "questions_count_update",
            "previousCount": previous,
            "questionCount": len(dialog.q4h),
            "course": dialog.latest.current_course,
        }
    )
