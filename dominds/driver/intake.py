"""Accepting input: text is checked at the edge, message ids are accepted once, and a prompt is durable
(in ``latest.yaml``'s queue) before it is acknowledged."""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.driver.errors import EngineBadRequest, EngineError
from dominds.driver.services import EngineServices
from dominds.store.errors import StoreError
from dominds.store.records import QueuedPrompt
from dominds.textcheck import lone_surrogate_at, lone_surrogate_problem


def queue_durably(engine: EngineServices, dialog: Dialog, prompt: QueuedPrompt) -> None:
    """Queue a prompt and persist it; if the disk refuses, the in-memory queue is rolled back too."""
    dialog.latest.queued_prompts.append(prompt)
    was_needed = dialog.latest.needs_drive
    try:
        engine.request_drive(dialog)
    except StoreError:
        dialog.latest.queued_prompts.remove(prompt)
        dialog.latest.needs_drive = was_needed
        raise


def refuse_duplicate(dialog: Dialog, msg_id: str) -> None:
    """A message id is accepted once: checked against the queue and the course on disk, not a cache."""
    if any(p.msg_id == msg_id for p in dialog.latest.queued_prompts) or msg_id in dialog.recorded_msg_ids():
        raise EngineError(f"message {msg_id!r} was already accepted")


def require_storable(fields: dict[str, str | None]) -> None:
    """Refuse text no file can hold (a lone UTF-16 surrogate), naming the field."""
    where = lone_surrogate_at(fields)
    if where is not None:
        raise EngineBadRequest(lone_surrogate_problem(where))
