"""The seed's event envelope: ``{event, session_id, content, metadata, step_id, timestamp}``.

Like the origin, ``session_id``, ``content``, ``metadata`` and ``step_id`` are left out when they have
nothing to say (``content`` stays when it is a falsy value that means something, e.g. ``0``). The
timestamp is ISO 8601 with the local offset, as everywhere in Dominds.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from dominds.ids import now_iso

# events the client sends
USER_EVENTS = (
    "user.create_session",
    "user.message",
    "user.response",
    "user.cancel",
    "user.cancel_task",
    "user.restart_task",
    "user.cancel_plan",
    "user.replan",
    "user.close_session",
)

TERMINAL_EVENTS = frozenset({"agent.final_answer", "agent.error", "agent.timeout", "agent.interrupted"})
"""Exactly one of these ends every run started by ``user.message`` (see ``ends_run``)."""


def ends_run(envelope: dict[str, Any]) -> bool:
    """Whether this event ends a run. An ``agent.error`` that refuses a request names it in
    ``metadata.event`` and leaves any running run alone; one without it is the run's failure."""
    if envelope.get("event") not in TERMINAL_EVENTS:
        return False
    metadata = envelope.get("metadata")
    return not (envelope["event"] == "agent.error" and isinstance(metadata, dict) and "event" in metadata)


class Emit(Protocol):
    """Send one envelope of a session (the session fills in ``session_id`` and ``timestamp``)."""

    def __call__(
        self,
        event: str,
        content: Any = None,
        metadata: dict[str, Any] | None = None,
        step_id: str | None = None,
    ) -> None: ...


def make_event(
    event: str,
    *,
    session_id: str | None = None,
    content: Any = None,
    metadata: dict[str, Any] | None = None,
    step_id: str | None = None,
) -> dict[str, Any]:
    envelope: dict[str, Any] = {"event": event, "timestamp": now_iso()}
    if session_id is not None:
        envelope["session_id"] = session_id
    if content is not None:
        envelope["content"] = to_jsonable(content)
    if metadata:
        envelope["metadata"] = to_jsonable(metadata)
    if step_id is not None:
        envelope["step_id"] = step_id
    return envelope


def to_jsonable(value: Any) -> Any:
    """Dataclasses become dicts, containers are walked, anything else unknown becomes its ``str``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
