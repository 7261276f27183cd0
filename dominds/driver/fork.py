"""Fork a main dialog at a generation: a new root (a new tree) that holds everything the original recorded
before that generation and runs it anew, with its prompt as it was or as the person edited it.

The original is only read. The fork is written whole in one rename (``create_dialog_dir`` with its
history): its course files are the original's records up to the generation's start, byte for byte the same
records, and the reminders as they are now. What the generation answered (a person's message, a question's
answer) is queued again as the fork's first message, or the person's edited text instead; a generation that
followed tool results or a teammate's reply (no prompt of its own) is simply driven again.

A tellask in the copied history whose teammate had not answered by then gets a recorded reply saying so
(the fork has no subdialogs: the original's stay with the original), so every call site in the fork has
exactly one reply. Its registry starts empty: a TYPE B session tellasked again in the fork is a new one.
``dialog.yaml`` records ``forkedFrom`` (root, course, genseq); the panel links back to the original.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from dominds.dialog.model import RootDialog
from dominds.driver.engine import Engine  # fork sits beside the engine, above the steps
from dominds.driver.errors import EngineBadRequest, EngineError
from dominds.driver.intake import announce_queued, require_storable
from dominds.driver.messages import dialog_context_messages
from dominds.ids import new_dialog_id, now_iso
from dominds.store.course_records import (
    CourseRecord,
    CourseStartRecord,
    GenStartRecord,
    HumanTextRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
)
from dominds.store.errors import StoreError
from dominds.store.records import DialogMeta, ForkOrigin, LatestState, QueuedPrompt
from dominds.store.request_log import copy_requests_before, request_log_name

log = logging.getLogger("dominds.driver")

NOT_CARRIED = (
    "(This call was still waiting for its reply when this dialog was forked from {root}; the reply, if any, "
    "went to the original dialog. Tellask again here if you still need it.)"
)
"""The reply a fork records for a call whose teammate had not answered before the fork point."""

REQUEUED_ORIGINS = ("user", "q4h_answer")
"""Prompts a person wrote: queued again in the fork as its first message."""


@dataclass
class ForkPlan:
    """What the fork will hold, computed from the original's files before anything is written."""

    courses: dict[int, list[CourseRecord]]
    """Course number → the records the fork starts with (the last course ends before the generation)."""
    prompt: str | None
    """The message queued in the fork (None: the generation had no prompt and none was given)."""
    prompt_msg_id: str | None
    """The original prompt's msgId when it is queued unedited (the records then match), else None."""


def plan_fork(root: RootDialog, course: int, genseq: int, message: str | None) -> ForkPlan:
    """The fork of ``root`` at generation ``genseq`` of ``course``; ``EngineBadRequest`` names what is wrong."""
    numbers = root.files.course_numbers()
    if course not in numbers:
        raise EngineBadRequest(f"dialog {root.self_id} has no course {course} (courses: 1 to {max(numbers, default=1)})")
    records = root.files.read_course(course)
    start = next((i for i, r in enumerate(records) if isinstance(r, GenStartRecord) and r.genseq == genseq), None)
    if start is None:
        last = max((r.genseq for r in records if isinstance(r, GenStartRecord)), default=0)
        raise EngineBadRequest(
            f"course {course} of dialog {root.self_id} has no generation {genseq} "
            + (f"(its generations are 1 to {last})" if last else "(it has no generation yet)")
        )
    prompts = [r for r in records if isinstance(r, HumanTextRecord) and r.genseq == genseq]
    if message is not None and not message.strip():
        raise EngineBadRequest("the edited message is empty")
    if message is None and any(p.origin not in REQUEUED_ORIGINS for p in prompts):
        origin = next(p.origin for p in prompts if p.origin not in REQUEUED_ORIGINS)
        raise EngineBadRequest(
            f"generation {genseq} answered a prompt of the runtime ({origin}), not a person's message: fork at "
            "another generation, or give the message the fork should start with"
        )
    courses = {n: root.files.read_course(n) for n in numbers if n < course}
    kept = records[:start]
    if not kept or not isinstance(kept[0], CourseStartRecord):
        raise EngineError(f"course {course} of dialog {root.self_id} does not begin with its course_start record")
    all_kept = [r for n in sorted(courses) for r in courses[n]] + kept
    kept = kept + _replies_for_unanswered_calls(all_kept, root, genseq)
    courses[course] = kept
    if message is not None:
        return ForkPlan(courses, message, None)
    if prompts:
        return ForkPlan(courses, "\n\n".join(p.content for p in prompts), prompts[0].msg_id if len(prompts) == 1 else None)
    return ForkPlan(courses, None, None)


def _replies_for_unanswered_calls(records: list[CourseRecord], root: RootDialog, genseq: int) -> list[CourseRecord]:
    answered = {r.call_id for r in records if isinstance(r, TeammateResponseRecord)}
    created = {r.call_id: r for r in records if isinstance(r, SubdialogCreatedRecord)}
    replies: list[CourseRecord] = []
    for record in records:
        if not isinstance(record, TeammateCallResultRecord) or record.status != "pending":
            continue
        if record.call_id in answered:
            continue
        answered.add(record.call_id)
        sub = created.get(record.call_id)
        note = NOT_CARRIED.format(root=root.root_id)
        replies.append(
            TeammateResponseRecord(
                ts=now_iso(),
                genseq=record.genseq,
                call_id=record.call_id,
                call_type=sub.call_type if sub else "C",
                responder_id=record.responder_id,
                callee_dialog_id=sub.subdialog_id if sub else "",
                tellask_head=record.tellask_head,
                status="failed",
                response=note,
                result=note,
                agent_id=root.agent_id,
                origin_member_id=root.agent_id,
            )
        )
    return replies


@dataclass
class _Fork:
    """The new root as it will be made: its records, state and first message."""

    meta: DialogMeta
    latest: LatestState
    first: CourseRecord
    history: dict[int, list[CourseRecord]]
    prompt: QueuedPrompt | None
    at_course: int


def fork_root(
    engine: Engine, root_id: str, *, genseq: int, course: int | None = None, message: str | None = None
) -> RootDialog:
    """Create the fork of main dialog ``root_id`` at ``genseq`` (of ``course``, default its current course),
    queue its first message or drive it, and return it. The original is not changed."""
    source = _forkable(engine.load_root(root_id))
    plan = plan_fork(source, course or source.latest.current_course, genseq, message)
    made = _new_root(engine, source, plan, genseq, message)
    fork = engine.add_root(made.meta, made.latest, first=made.first, history=made.history, reminders=source.files.read_reminders())
    _copy_requests(source, fork, plan.courses, made.at_course, genseq)
    return _started(engine, fork, made)


async def fork_root_off_loop(
    engine: Engine, root_id: str, *, genseq: int, course: int | None = None, message: str | None = None
) -> RootDialog:
    """``fork_root`` with the original read, and the fork written and read back, in worker threads: a fork
    of a 10,000-turn dialog held the event loop for 1.3 s (the daemon's API forks this way)."""
    source = _forkable(await engine.load_root_off_loop(root_id))
    plan = await asyncio.to_thread(plan_fork, source, course or source.latest.current_course, genseq, message)
    made = _new_root(engine, source, plan, genseq, message)
    reminders = await asyncio.to_thread(source.files.read_reminders)
    fork = await engine.add_root_off_loop(
        made.meta,
        made.latest,
        first=made.first,
        history=made.history,
        reminders=reminders,
        then=lambda fork: _prepared(source, fork, plan, made, genseq),
    )
    return _started(engine, fork, made)


def _prepared(source: RootDialog, fork: RootDialog, plan: ForkPlan, made: _Fork, genseq: int) -> None:
    """In the worker thread, before the fork is registered (so before anything can drive it): its request
    logs (its first generation's request comes after them), and what its first generation derives from
    its whole history, which would otherwise be built on the event loop (0.1-0.2 s at 10,000 records)."""
    _copy_requests(source, fork, plan.courses, made.at_course, genseq)
    try:  # only saves time: its failure must not leave a fork made on disk and refused to the person
        fork.recorded_msg_ids()
        dialog_context_messages(fork)
    except Exception:
        log.warning("fork %s: its history was not prepared ahead of its first generation", fork.self_id, exc_info=True)


def _forkable(source: RootDialog) -> RootDialog:
    if source.load_error:
        raise EngineError(f"dialog {source.root_id} cannot be forked: {source.load_error}")
    if source.meta.conductor:
        raise EngineBadRequest(f"dialog {source.root_id} is a {source.meta.conductor} workflow run; its workflow drives it")
    return source


def _new_root(engine: Engine, source: RootDialog, plan: ForkPlan, genseq: int, message: str | None) -> _Fork:
    at_course = max(plan.courses)
    member = engine.config.get().team.member(source.agent_id)
    push_max = member.diligence_push_max if member is not None else 0
    new_id = new_dialog_id()
    title = source.latest.title or source.meta.title
    meta = DialogMeta(
        id=new_id,
        root_id=new_id,
        agent_id=source.agent_id,
        task_doc_path=source.meta.task_doc_path,
        created_at=now_iso(),
        forked_from=ForkOrigin(root_id=source.root_id, course=at_course, genseq=genseq, edited=message is not None),
    )
    prompt = None
    if plan.prompt is not None:
        require_storable({"content": plan.prompt, "msgId": plan.prompt_msg_id})
        prompt = QueuedPrompt(msg_id=plan.prompt_msg_id or f"msg-{new_dialog_id()}", content=plan.prompt, queued_at=now_iso())
    latest = LatestState(
        current_course=at_course,
        last_modified=now_iso(),
        disable_diligence_push=push_max < 1,
        diligence_push_remaining_budget=max(push_max, 0),
        title=f"Fork of {title}" if title else None,
        needs_drive=True,
        # The first message is in the fork's files from the start (the directory's rename is the one step): queued
        # after it, a crash in between left a fork that never ran the person's message.
        queued_prompts=[prompt] if prompt is not None else [],
    )
    first, *rest = plan.courses[at_course]
    return _Fork(meta, latest, first, {**plan.courses, at_course: rest}, prompt, at_course)


def _started(engine: Engine, fork: RootDialog, made: _Fork) -> RootDialog:
    if made.prompt is not None:
        announce_queued(fork, made.prompt)
    engine.want(fork)
    return fork


def _copy_requests(source: RootDialog, fork: RootDialog, courses: dict[int, list[CourseRecord]], at: int, genseq: int) -> None:
    """The copied generations keep what their model saw (``store/request_log.py``): the original's request logs
    up to the fork's generation, written before the fork's first generation records its own."""
    for number in sorted(courses):
        name = request_log_name(number)
        try:
            copy_requests_before(source.files.dir / name, fork.files.dir / name, genseq if number == at else None)
        except (StoreError, OSError) as exc:  # a fork without its history's requests is still a fork
            log.warning("fork %s: the requests of course %s were not copied: %s", fork.self_id, number, exc)
