"""What every outgoing message is built from: the base models, stamps and shared shapes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, strict=False, defer_build=True)


class DialogIdent(WireModel):
    """``{selfId, rootId}``: which dialog."""

    selfId: str
    rootId: str


class ChannelEvent(WireModel):
    """What every published event carries (pubchan stamps it; a reply of the same type may lack them)."""

    seq: int | None = None
    """Position on its channel (per dialog, or the global channel), from 1."""
    epoch: str | None = None
    """The daemon run; a new run starts a new epoch (clients then replay)."""
    timestamp: str | None = None
    """ISO 8601 time of publication (of the record, in a replay)."""
    replay: bool | None = None
    """``true`` on events rebuilt from the files (a snapshot), absent on live ones."""
    requestId: str | int | None = None
    """On the ``course_update`` that answers a ``display_course``."""


class DialogEvent(ChannelEvent):
    """An event of one dialog's channel."""

    dialog: DialogIdent | None = None
    """Which dialog (absent only on a reply that names none)."""


class GlobalEvent(ChannelEvent):
    """An event of the global channel (every socket gets it)."""


class Gen(DialogEvent):
    """An event of one generation."""

    course: int
    """Course the generation belongs to."""
    genseq: int | None
    """Generation number in the dialog (``null`` only on a storage failure outside a generation)."""


class Reply(WireModel):
    requestId: str | int | None = None
    """Echoed from the request."""


class Question(WireModel):
    id: str
    selfId: str
    rootId: str
    agentId: str
    taskDocPath: str
    tellaskHead: str
    bodyContent: str
    askedAt: str
    callId: str
    callSiteRef: dict[str, Any]
    """``{course, messageIndex}``."""
    kind: Literal["tellask", "elicitation"] = "tellask"
    """``tellask``: an agent's `!?@human`; ``elicitation``: an MCP server asking during a tool call."""


class PromptAssignment(WireModel):
    """The tellask behind a subdialog's assignment prompt, as its caller wrote it."""

    fromAgentId: str
    callerDialogId: str
    callId: str
    tellaskHead: str
    tellaskBody: str
    bodyHtml: str | None = None


class PromptAskBack(WireModel):
    """The ask-back behind a tellask-back prompt, as the asking subdialog wrote it."""

    fromAgentId: str
    fromDialogId: str
    callId: str
    tellaskHead: str
    tellaskBody: str
    bodyHtml: str | None = None


class Reminder(WireModel):
    id: str
    content: str
    owner: str | None


class Problem(WireModel):
    kind: str
    source: str
    line: int | None
    severity: Literal["error", "warning"]
    message: str
    id: str


class TaskdocSection(WireModel):
    key: str
    """``goals``, ``bearinmind/risks``, ``<category>/<selector>``."""
    category: str | None
    """`bearinmind` or an extra category; `null` for goals, constraints, progress."""
    selector: str
    """The section's name in its category."""
    file: str
    """rtws-relative path of the section file."""
    exists: bool
    """Whether the file exists."""
    markdown: str
    """The file's text, when it can be edited without loss (else empty)."""
    html: str
    """The text rendered and sanitised (a first heading repeating the section's name left out)."""
    hash: str
    """What ``POST /api/taskdocs/section`` compares (``baseHash``) to refuse a stale edit."""
    editable: bool
    """The panel may replace it (not a cut or non-UTF-8 file)."""
    readOnlyReason: str | None
    """Why it is not editable."""
