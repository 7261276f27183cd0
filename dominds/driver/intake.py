"""Accepting input: text is checked at the edge, message ids are accepted once, and a prompt is durable
(appended to the dialog's queue log, ``store/queue_log.py``) before it is acknowledged.

Nothing is sent that the user cannot see: a user message or an answer that is queued is announced
(``prompt_queued_evt``) and listed in the dialog's summary until the generation that consumes it records
it (``end_of_user_saying_evt`` with the same ``msgId``); a queued user message can be cancelled
(``queued_prompt_cancelled_evt``) until then.
"""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.driver.errors import EngineBadRequest, EngineError, QueueFull
from dominds.driver.services import EngineServices
from dominds.store.errors import StoreError
from dominds.store.records import QueuedPrompt
from dominds.textcheck import lone_surrogate_at, lone_surrogate_problem


def queue_durably(engine: EngineServices, dialog: Dialog, prompt: QueuedPrompt, *, latest_changed: bool = False) -> None:
    """Queue a prompt and persist it: one line appended to the queue log, plus a ``latest.yaml`` write
    only when ``needsDrive`` is not set yet or ``latest_changed`` (a first message's title). If the disk
    refuses, nothing is queued, in memory or on disk.

    ``needsDrive`` goes first: a crash or a refused append after it leaves a revival with nothing new, which
    recovery clears (``recovery_calls.nothing_new``: a drive would ask the model with no prompt)."""
    if latest_changed or not dialog.latest.needs_drive:
        was_needed = dialog.latest.needs_drive
        try:
            engine.request_drive(dialog)
        except StoreError:
            dialog.latest.needs_drive = was_needed
            raise
    dialog.queue.put(prompt)
    engine.want(dialog)


VISIBLE_ORIGINS = frozenset({"user", "q4h_answer"})
"""Queued prompts a person wrote, shown as queued in the panel; the others are the runtime's."""


def queued_payload(prompt: QueuedPrompt) -> dict[str, object]:
    return {
        "msgId": prompt.msg_id,
        "content": prompt.content,
        "origin": prompt.origin,
        "queuedAt": prompt.queued_at,
        "questionId": prompt.question_id,
        "cancellable": prompt.origin == "user",
    }


def visible_queue(dialog: Dialog) -> list[dict[str, object]]:
    return [queued_payload(p) for p in dialog.queue if p.origin in VISIBLE_ORIGINS]


def announce_queued(dialog: Dialog, prompt: QueuedPrompt) -> None:
    """Published after ``queue_durably`` persisted it."""
    dialog.publish({"type": "prompt_queued_evt", **queued_payload(prompt)})


def cancel_queued(dialog: Dialog, msg_id: str) -> QueuedPrompt:
    """Take a queued user message back before any generation consumed it (persisted, then announced).

    Consumption is synchronous from choosing the prompt to recording it, so a message is either still
    queued here (and never reaches the model) or already recorded (and the cancel is refused).
    """
    prompt = dialog.queue.get(msg_id)
    if prompt is None:
        raise EngineError(f"message {msg_id!r} is not queued in dialog {dialog.self_id} (already delivered or cancelled)")
    if prompt.origin != "user":
        raise EngineError(f"message {msg_id!r} is a {prompt.origin.replace('_', ' ')}, not a message of yours to cancel")
    dialog.queue.take(msg_id, "cancelled")  # a refused write raises with the message still queued
    if not dialog.queue and dialog.q4h and not dialog.pending and not dialog.is_driving:
        dialog.latest.needs_drive = False  # it was set for this message alone; the answer sets it again
        dialog.save_latest(soon=True)  # a flag only: a blocked dialog does not drive either way
    dialog.publish({"type": "queued_prompt_cancelled_evt", "msgId": msg_id})
    return prompt


def refuse_when_full(dialog: Dialog, limit: int) -> None:
    """At most ``limit`` prompts wait in one dialog: a flood is refused at the edge, never a stall."""
    if len(dialog.queue) >= limit:
        raise QueueFull(
            f"dialog {dialog.self_id} already has {len(dialog.queue):,} messages waiting to be read "
            f"(the limit per dialog is {limit:,}); send again once the agent has read some"
        )


def refuse_duplicate(dialog: Dialog, msg_id: str) -> None:
    """A message id is accepted once: checked against the queue and the course on disk, not a cache."""
    if msg_id in dialog.queue or msg_id in dialog.recorded_msg_ids():
        raise EngineError(f"message {msg_id!r} was already accepted")


def require_storable(fields: dict[str, str | None]) -> None:
    """Refuse text no file can hold (a lone UTF-16 surrogate), naming the field."""
    where = lone_surrogate_at(fields)
    if where is not None:
        raise EngineBadRequest(lone_surrogate_problem(where))
