"""One drive: generations in a loop until the dialog suspends, stops asking for more, is stopped, or fails.

Runs under the dialog's FIFO drive mutex (taken by the scheduler). At the end it settles the run
state, answers inbound ask-backs, and — for a subdialog that can drive — supplies its answer.
"""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.driver import questions, run_control, texts
from dominds.driver.drive_scope import DriveScope
from dominds.driver.generation import GenOutcome, run_generation
from dominds.driver.loop_guard import OUTSIDE_ORIGINS, check_loops, idle_clears, idle_clears_notice
from dominds.driver.services import EngineServices
from dominds.driver.supply import answer_tellask_back, supply_response
from dominds.ids import now_iso, short_token
from dominds.store.course_records import HumanTextRecord, RunMarkerRecord
from dominds.store.records import InboundTellaskBack, QueuedPrompt, RunState

MAX_GENERATIONS_PER_DRIVE = 200
"""A runaway guard: a model that calls tools forever is interrupted with a clear reason."""


async def drive_dialog(engine: EngineServices, dialog: Dialog, scope: DriveScope | None = None) -> None:
    """Drive ``dialog`` until it suspends, has nothing more to do, is stopped, or fails. The generations
    run inside ``scope`` (a Stop cancels them, driver/drive_scope.py); settling happens outside it."""
    if dialog.is_dead or dialog.load_error or dialog.latest.run_state.kind == "terminal" or dialog.meta.conductor:
        dialog.latest.needs_drive = False
        return
    scope = scope or DriveScope(dialog.self_id)
    dialog.stop_reason = scope.reason
    was_interrupted = dialog.latest.run_state.kind == "interrupted"
    dialog.set_run_state(RunState(kind="proceeding"), save=False)  # saved with the generation start
    if was_interrupted:
        dialog.append(RunMarkerRecord(ts=now_iso(), kind="resumed"))
        dialog.publish({"type": "dlg_run_state_marker_evt", "kind": "resumed"})
    outcome = await scope.run(_generations(engine, dialog))
    if outcome is None:  # the scope was cancelled: each generation and tool call recorded itself interrupted
        outcome = GenOutcome(stopped=True)
        dialog.stop_reason = dialog.stop_reason or scope.reason
    _settle(engine, dialog, outcome)
    await _after_drive(engine, dialog, outcome)


async def _generations(engine: EngineServices, dialog: Dialog) -> GenOutcome:
    """The drive's generations, in a loop, as the work of its cancel scope."""
    outcome = GenOutcome()
    generations = 0
    answering_user = False
    """Serving a user message that drove this main dialog while it waited on subdialogs (DESIGN §4.3): the
    turn goes on through its own tool results. Otherwise (it was not waiting) today's rules apply."""
    while True:
        prompt = next_prompt(dialog)
        if prompt is not None:
            answering_user = prompt.origin == "user" and bool(dialog.pending)
        outcome = await run_generation(engine, dialog, prompt, merged_user_messages(dialog, prompt))
        # The guard counts generations in a row that no one asked for: 10,000 queued messages are read
        # in one drive, and each resets it (they used to stop the drive after 200).
        generations = 1 if prompt is not None and prompt.origin in OUTSIDE_ORIGINS else generations + 1
        if outcome.context_overflow:
            start_new_course(engine, dialog, reason="context_overflow", carried=_message_being_answered(dialog))
            continue
        if not (outcome.stopped or outcome.error):
            outcome.error = check_loops(dialog)  # a model repeating itself: told, then stopped with the reason
        if dialog.pending_new_course:
            start_new_course(engine, dialog, reason=dialog.new_course_reason)
        if outcome.stopped or outcome.error:
            break
        if not outcome.had_output:
            await answer_settled_obligation(engine, dialog)
        if not dialog.can_drive() and not (answering_user and outcome.had_output and dialog.waits_only_on_subdialogs()):
            break  # (a main dialog answering a user message while its subdialogs work finishes its own tool work)
        # needsDrive set again during the generation: an answer arrived meanwhile (the revival is this drive's)
        if next_prompt(dialog) is not None or outcome.had_output or dialog.latest.needs_drive:
            if generations >= MAX_GENERATIONS_PER_DRIVE:
                outcome.error = f"stopped after {generations} generations in one drive (runaway guard)"
                break
            continue
        if dialog.is_root and engine.diligence_push(dialog):
            continue
        break
    return outcome


def _settle(engine: EngineServices, dialog: Dialog, outcome: GenOutcome) -> None:
    # needsDrive may have been set again since the last generation began (an answer arrived after the loop
    # ended, while the scope's task was finishing): the dialog is driven again rather than settled.
    wanted = bool(dialog.queue) or dialog.latest.needs_drive
    dialog.latest.needs_drive = wanted and not outcome.stopped and not outcome.error
    if dialog.is_dead:
        dialog.save_latest()
        return
    if outcome.stopped:
        reason = dialog.stop_reason or "user_stop"
        state = RunState(kind="interrupted", reason=reason)
    elif outcome.error:
        state = RunState(kind="interrupted", reason="system_stop", detail=outcome.error)
    else:
        state = dialog.idle_run_state()
    dialog.set_run_state(state, save=False)
    dialog.save_latest()
    if state.kind == "interrupted":
        dialog.append(RunMarkerRecord(ts=now_iso(), kind="interrupted", reason=state.reason))
        dialog.publish({"type": "dlg_run_state_marker_evt", "kind": "interrupted", "reason": state.reason})
    if outcome.stopped and state.reason != "server_shutdown":
        # a dispatch cancelled at its commit point still created its subdialog (subdialogs._create): the
        # Stop covers it too, as it covered the subdialogs that were working when it came (run_control.stop)
        run_control.stop_under(engine, dialog, state.reason or "user_stop")
    dialog.stop_reason = None


async def _after_drive(engine: EngineServices, dialog: Dialog, outcome: GenOutcome) -> None:
    assignment = dialog.meta.assignment_from_sup
    if assignment is None or outcome.stopped or dialog.q4h or dialog.is_dead:
        return
    if outcome.error:
        # Never a stranded caller: it gets a failed reply it can act on (the subdialog can still be resumed).
        await supply_response(engine, dialog, assignment, "", "failed", failure_reason=outcome.error)
        return
    if dialog.latest.needs_drive:
        return  # new input arrived: the next drive answers (and supplies) with it in view
    if not dialog.pending and not dialog.queue and not dialog.latest.inbound_tellask_backs:
        await supply_response(engine, dialog, assignment, dialog.last_saying() or "(the teammate gave no answer)")


CONTINUATION_ORIGINS = frozenset({"q4h_answer", "new_course", "system", "diligence"})
"""Prompts that continue the work in hand. Others (user, tellask_back, assignment) open a new
obligation and wait while an ask-back is being answered."""


def continues(serving: InboundTellaskBack, prompt: QueuedPrompt) -> bool:
    """Whether ``prompt`` continues the work of the ask-back being served (rather than waiting behind it)."""
    return prompt.origin in CONTINUATION_ORIGINS and prompt.msg_id not in serving.queued_before


WHILE_SUBDIALOGS_WORK = frozenset({"tellask_back", "user", "q4h_answer"})
"""What a main dialog waiting on its subdialogs consumes (a user message is what lets it drive; an answer
to its own question is read before a message typed after it); the rest waits for the replies."""


MAX_MERGED_MESSAGES = 20
"""At most this many queued user messages are answered by one generation (a long queue stays many turns)."""


def merged_user_messages(dialog: Dialog, prompt: QueuedPrompt | None) -> list[QueuedPrompt]:
    """The user messages queued right behind ``prompt`` (itself a user message): answered by the same
    generation, so two quick messages get one considered answer; each is recorded with its own msgId."""
    if prompt is None or prompt.origin != "user":
        return []
    merged: list[QueuedPrompt] = []
    behind = False
    for queued in dialog.queue:
        if not behind:
            behind = queued.msg_id == prompt.msg_id
            continue
        if queued.origin != "user" or len(merged) >= MAX_MERGED_MESSAGES - 1:
            break
        merged.append(queued)
    return merged


def next_prompt(dialog: Dialog) -> QueuedPrompt | None:
    """The prompt the next generation consumes, serving obligations one at a time, in order."""
    queue = dialog.queue
    serving = dialog.serving_obligation()
    if serving is not None:
        return next((p for p in queue if continues(serving, p)), None)
    if dialog.pending and dialog.waits_only_on_subdialogs():
        # A main dialog waiting on subdialogs: an ask-back (answering it unblocks them) or a user message
        # (DESIGN §4.3) goes ahead, in the order they arrived, so neither starves the other.
        waiting = [p for p in queue if p.origin in WHILE_SUBDIALOGS_WORK]
        if waiting and waiting[0].origin == "user":
            answer = next((p for p in waiting if p.origin == "q4h_answer"), None)
            if answer is not None:
                return answer
        return waiting[0] if waiting else None
    if dialog.pending and dialog.latest.inbound_tellask_backs:
        # Blocked on subdialogs: only an ask-back may go ahead (answering it is what unblocks them).
        return queue.first_of("tellask_back")
    first = queue.first()
    if first is not None and first.origin == "user":
        # A message typed while a question was open waits behind the answer: the agent reads the answer
        # to its own question first (the message used to overtake it and the agent replied twice).
        answer = queue.first_of("q4h_answer")
        if answer is not None:
            return answer
    return first


def settled_obligation(dialog: Dialog) -> InboundTellaskBack | None:
    """The ask-back being served, if its own work has settled (its answer is the last saying)."""
    serving = dialog.serving_obligation()
    if serving is None or dialog.q4h or dialog.obligation_work(serving):
        return None
    if any(continues(serving, p) for p in dialog.queue):
        return None  # e.g. an answer to a question asked while serving: read it first
    return serving


async def answer_settled_obligation(engine: EngineServices, dialog: Dialog) -> bool:
    """Reply to the ask-back being served once its own work has settled; True when it was answered."""
    serving = settled_obligation(dialog)
    if serving is None:
        return False
    await answer_tellask_back(engine, dialog, serving, answer_of(dialog))
    return True


def answer_of(dialog: Dialog) -> str:
    return dialog.last_saying() or "(no answer was given)"


def _message_being_answered(dialog: Dialog) -> str | None:
    """The course's last prompt from someone (a user, a question's answer, a caller), not the runtime's own
    (a diligence push or a runtime note is skipped; the new-course prompt is where the course began)."""
    for record in reversed(dialog.records):
        if isinstance(record, HumanTextRecord) and record.origin not in ("diligence", "system"):
            return None if record.origin == "new_course" else record.content
    return None


def start_new_course(engine: EngineServices, dialog: Dialog, *, reason: str, carried: str | None = None) -> None:
    """clear_mind: new course file, Q4H cleared, reminders and registry kept, new-course prompt queued first.

    ``reason`` ``context_overflow``: the runtime's own new course after the provider refused the course as
    too long; its prompt says so and carries ``carried`` (the prompt the failed generation answered)."""
    clears = idle_clears(dialog.records) if reason == "clear_mind" else 0  # read before the course ends
    dialog.pending_new_course = False
    dialog.new_course_reason = "clear_mind"
    questions.clear_all(engine, dialog)
    number = dialog.latest.current_course + 1
    dialog.start_course(number, reason, idle_clears=clears)
    assignment = None
    if dialog.meta.assignment_from_sup is not None:
        a = dialog.meta.assignment_from_sup
        assignment = texts.assignment_text(dialog.agent_id, a.origin_member_id, a.tellask_head, a.tellask_body)
    prompt = QueuedPrompt(
        msg_id=f"course-{number}-{short_token(3)}",
        content=texts.new_course_prompt(number, assignment, reason=reason, carried=carried, loop_note=idle_clears_notice(clears)),
        grammar="markdown",
        origin="new_course",
        queued_at=now_iso(),
    )
    dialog.queue.put(prompt, front=True, with_latest=True)  # one write with the new course's number
    dialog.save_latest()
    dialog.publish({"type": "course_update", "course": number, "totalCourses": number})
