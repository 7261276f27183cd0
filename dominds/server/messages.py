"""Inbound websocket messages: one strict pydantic model per ``type``.

Every frame is validated before anything acts on it; a bad frame becomes one readable sentence in an
``error`` reply (``parse_client_message`` raises ``BadMessage``). Unknown *fields* are ignored so that
older and newer panels keep working (the reference sends ``userLanguageCode``, ``continuationType``…);
unknown *types*, missing fields and wrong JSON types are refused. ``strict`` stops pydantic from
coercing ``"5"`` into ``5`` or ``1`` into ``True``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from dominds.textcheck import lone_surrogate_at, lone_surrogate_problem

MAX_FRAME_BYTES = 1024 * 1024
"""Protocol limit of one inbound frame: larger frames get an ``error`` reply and are not parsed."""

RequestId = Annotated[str, Field(max_length=200)] | int


class _Message(BaseModel):
    # ``defer_build``: a model's validator is built when a frame of its type first comes, not at
    # import (the 22 of them cost the idle daemon 1.3 MiB; a panel sends a handful of kinds).
    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True, defer_build=True)

    requestId: RequestId | None = None
    """Echoed in the reply (and in an ``error``) so a client can match answers to requests."""


class DialogRef(BaseModel):
    """``{selfId, rootId?}``: ``rootId`` makes the lookup cheap; without it the daemon searches."""

    # ``defer_build`` (as in ``_Message``) says when the validator is built, not what it accepts: made
    # ``False`` it is an equivalent mutant (bin/mutate). ``strict`` matters for ``Since`` only: pydantic's lax
    # mode coerces no JSON value into a ``str``, so here it guards a future non-string field.
    model_config = ConfigDict(strict=True, extra="ignore", defer_build=True)

    selfId: Annotated[str, Field(min_length=1, max_length=100)]
    rootId: Annotated[str, Field(min_length=1, max_length=100)] | None = None


class Since(BaseModel):
    """The last event a client saw of a dialog: the daemon run (``epoch``) and the event's ``seq``."""

    # A nested model is not strict because its parent is: without ``strict`` here ``seq: "5"`` was accepted.
    # ``defer_build=False`` is an equivalent mutant (when the validator is built, not what it accepts).
    model_config = ConfigDict(strict=True, extra="ignore", defer_build=True)

    epoch: Annotated[str, Field(max_length=64)]
    seq: Annotated[int, Field(ge=0)]


FollowMode = Literal["replace", "add"]


class SetUiLanguage(_Message):
    type: Literal["set_ui_language"]
    uiLanguage: Literal["en", "zh"]


class GetProblems(_Message):
    type: Literal["get_problems"]


class CreateDialog(_Message):
    type: Literal["create_dialog"]
    agentId: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    taskDocPath: Annotated[str, Field(min_length=1, max_length=1000)]
    follow: FollowMode = "replace"


class DisplayDialog(_Message):
    type: Literal["display_dialog"]
    dialog: DialogRef
    since: Since | None = None
    follow: FollowMode = "replace"


class UnfollowDialog(_Message):
    type: Literal["unfollow_dialog"]
    dialog: DialogRef


class DisplayCourse(_Message):
    """One page of a course: the last, the one ending at record ``before``, the one starting at record
    ``after``, or the one around call ``aroundCall`` (paging **(ours)**)."""

    type: Literal["display_course"]
    dialog: DialogRef
    course: Annotated[int, Field(ge=1)]
    before: Annotated[int, Field(ge=0)] | None = None
    after: Annotated[int, Field(ge=0)] | None = None
    aroundCall: Annotated[str, Field(min_length=1, max_length=300)] | None = None


class DisplayReminders(_Message):
    type: Literal["display_reminders"]
    dialog: DialogRef


class GetTaskdoc(_Message):
    type: Literal["get_taskdoc"]
    dialog: DialogRef


class DriveByUserMessage(_Message):
    type: Literal["drive_dlg_by_user_msg"]
    dialog: DialogRef
    content: str
    msgId: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    userLanguageCode: str | None = None


class DriveByUserAnswer(_Message):
    type: Literal["drive_dialog_by_user_answer"]
    dialog: DialogRef
    content: str
    questionId: Annotated[str, Field(min_length=1, max_length=300)]
    msgId: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    continuationType: str | None = None
    userLanguageCode: str | None = None


class SetDialogTitle(_Message):
    """Rename a dialog (an empty title clears it) **(ours)**."""

    type: Literal["set_dialog_title"]
    dialog: DialogRef
    title: Annotated[str, Field(max_length=1000)]


class CancelQueuedMessage(_Message):
    """Take back a queued user message before the agent reads it **(ours)**."""

    type: Literal["cancel_queued_msg"]
    dialog: DialogRef
    msgId: Annotated[str, Field(min_length=1, max_length=200)]


class InterruptDialog(_Message):
    type: Literal["interrupt_dialog"]
    dialog: DialogRef


class EmergencyStop(_Message):
    type: Literal["emergency_stop"]


class ResumeDialog(_Message):
    type: Literal["resume_dialog"]
    dialog: DialogRef


class ResumeAll(_Message):
    type: Literal["resume_all"]


class DeclareSubdialogDead(_Message):
    type: Literal["declare_subdialog_dead"]
    dialog: DialogRef
    note: Annotated[str, Field(max_length=10_000)] = ""


class GetQ4hState(_Message):
    type: Literal["get_q4h_state"]


class ResumeGlobal(_Message):
    type: Literal["resume_global"]
    since: Since


ClientMessage = (
    SetUiLanguage
    | GetProblems
    | CreateDialog
    | DisplayDialog
    | UnfollowDialog
    | DisplayCourse
    | DisplayReminders
    | GetTaskdoc
    | DriveByUserMessage
    | DriveByUserAnswer
    | CancelQueuedMessage
    | SetDialogTitle
    | InterruptDialog
    | EmergencyStop
    | ResumeDialog
    | ResumeAll
    | DeclareSubdialogDead
    | GetQ4hState
    | ResumeGlobal
)

MESSAGE_MODELS: dict[str, type[_Message]] = {
    "set_ui_language": SetUiLanguage,
    "get_problems": GetProblems,
    "create_dialog": CreateDialog,
    "display_dialog": DisplayDialog,
    "unfollow_dialog": UnfollowDialog,
    "display_course": DisplayCourse,
    "display_reminders": DisplayReminders,
    "get_taskdoc": GetTaskdoc,
    "drive_dlg_by_user_msg": DriveByUserMessage,
    "drive_dialog_by_user_answer": DriveByUserAnswer,
    "cancel_queued_msg": CancelQueuedMessage,
    "set_dialog_title": SetDialogTitle,
    "interrupt_dialog": InterruptDialog,
    "emergency_stop": EmergencyStop,
    "resume_dialog": ResumeDialog,
    "resume_all": ResumeAll,
    "declare_subdialog_dead": DeclareSubdialogDead,
    "get_q4h_state": GetQ4hState,
    "resume_global": ResumeGlobal,
}
"""``type`` → model of every message a client may send."""


class BadMessage(Exception):
    """A frame that cannot be acted on; ``str()`` is the reply text, the ids are echoed when known."""

    def __init__(
        self, message: str, *, request_type: str | None = None, request_id: str | int | None = None
    ) -> None:
        super().__init__(message)
        self.request_type = request_type
        self.request_id = request_id


def parse_client_message(frame: str) -> ClientMessage:
    if len(frame) > MAX_FRAME_BYTES or len(frame.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES:
        raise BadMessage(f"message too large: the limit is {MAX_FRAME_BYTES} bytes per frame")
    try:
        raw = json.loads(frame)
    except (json.JSONDecodeError, RecursionError):
        raise BadMessage("Invalid packet format: not valid JSON") from None
    if not isinstance(raw, dict):
        raise BadMessage("Invalid packet format: a message is a JSON object with a `type`")
    request_id = raw.get("requestId") if isinstance(raw.get("requestId"), str | int) else None
    kind = raw.get("type")
    where = lone_surrogate_at(raw)
    if where is not None:
        kind_name = kind if isinstance(kind, str) else None
        raise BadMessage(lone_surrogate_problem(where), request_type=kind_name, request_id=request_id)
    if not isinstance(kind, str):
        raise BadMessage("Invalid packet format: `type` (a string) is missing", request_id=request_id)
    model = MESSAGE_MODELS.get(kind)
    if model is None:
        raise BadMessage(f"unknown message type {kind!r}", request_type=kind, request_id=request_id)
    try:
        message: ClientMessage = model.model_validate(raw)  # type: ignore[assignment]
    except ValidationError as exc:
        raise BadMessage(_describe(kind, exc), request_type=kind, request_id=request_id) from None
    return message


_UNION_BRANCH = re.compile(r"^(str|int|float|bool|list|dict|none|constrained-\w+|[\w-]+\[.*\])$")
"""A ``loc`` part pydantic adds for a branch of a union (``requestId.constrained-str``): not a field."""


def _describe(kind: str, exc: ValidationError) -> str:
    """At most three problems, one per field: a union's branches are one field, described by the branch
    matching the value's JSON type (``requestId`` too long, not "…or should be an integer")."""
    by_field: dict[str, ErrorDetails] = {}
    for error in exc.errors(include_url=False):
        parts = [str(part) for part in error["loc"]]
        field = ".".join(p for p in parts if not _UNION_BRANCH.match(p)) or "message"
        branch = next((p for p in parts if _UNION_BRANCH.match(p)), "")
        value = error.get("input")
        matches = (isinstance(value, str) and "str" in branch) or (type(value) is int and "int" in branch)
        if field not in by_field or matches:
            by_field[field] = error
    problems = []
    for field, error in list(by_field.items())[:3]:
        if error["type"] == "missing":
            problems.append(f"`{field}` is required")
        else:
            problems.append(f"`{field}`: {error['msg']} (got {_short(error.get('input'))})")
    return f"bad {kind} message: " + "; ".join(problems)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, BaseModel) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
