"""Typed records for every per-dialog state file (DESIGN §3).

Each YAML/JSON state file carries ``v`` (its format version). Field names on disk are the seed's
camelCase; Python attributes are snake_case. Course records (``course-NNN.jsonl``) live in
``course_records.py``. Every model validates on load, so a file that parses as YAML but has the
wrong shape raises ``CorruptFileError`` naming the file instead of failing later.
"""

from __future__ import annotations

import secrets
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

STATE_FORMAT_VERSION = 1


class Record(BaseModel):
    """Base of all persisted records: camelCase on disk, unknown keys ignored for forward compatibility."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        defer_build=True,
    )

    def to_disk(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# ---------------------------------------------------------------- dialog.yaml


class Assignment(Record):
    """Why a subdialog exists and where its answer goes (updated on each TYPE B re-tellask)."""

    tellask_head: str
    """The headline of the tellask that assigned the work, verbatim (``@agent …``)."""
    tellask_body: str
    """The body of that tellask, verbatim."""
    origin_member_id: str
    """Agent id of the dialog that sent the tellask."""
    caller_dialog_id: str
    """Self id of the dialog the answer is supplied to (the *current* caller)."""
    call_id: str
    """callId of the tellask; the response is supplied once per (subdialog, callId)."""
    call_type: Literal["A", "B", "C"] = "C"
    """TYPE B (registered session) or C (fresh); A is never an assignment."""
    collective_targets: list[str] | None = None
    """All targets when one tellask addressed several members."""


class ForkOrigin(Record):
    """Where a forked root came from: the original root and the generation it was forked at."""

    root_id: str
    """Root id of the original dialog (which the fork never changes)."""
    course: int
    """Course of the original in which the generation ran."""
    genseq: int
    """The generation the fork runs anew: the fork holds everything recorded before it."""
    edited: bool = False
    """The prompt of that generation was replaced by the person who forked."""


class DialogMeta(Record):
    """``dialog.yaml``: identity of a dialog; written at creation and on TYPE B re-assignment."""

    v: int = STATE_FORMAT_VERSION
    """Format version."""
    id: str
    """Self id of the dialog."""
    root_id: str
    """Id of the root of its tree (equal to ``id`` for a root)."""
    agent_id: str
    """Member id of the agent that speaks in this dialog."""
    task_doc_path: str
    """rtws-relative path of the Taskdoc package shared by the whole tree."""
    created_at: str
    """ISO 8601 creation time."""
    supdialog_id: str | None = None
    """Subdialogs: self id of the dialog that created it."""
    tellask_session: str | None = None
    """TYPE B subdialogs: the session slug of their registry key."""
    assignment_from_sup: Assignment | None = None
    """Subdialogs: the current assignment."""
    fbr: bool = False
    """Fresh Boots Reasoning (``@self``) subdialog: runs without function tools."""
    conductor: str | None = None
    """Roots run by a workflow (e.g. ``tot``): Python code asks teammates; the root never calls an LLM."""
    title: str | None = None
    """Optional human title (workflow runs name their question here)."""
    forked_from: ForkOrigin | None = None
    """Roots made by forking another root at a generation (``dominds fork``, the panel's Fork). Since v1."""

    @property
    def is_root(self) -> bool:
        return self.id == self.root_id


# ---------------------------------------------------------------- latest.yaml

RunStateKind = Literal[
    "idle", "proceeding", "stop_requested", "interrupted", "blocked", "dead", "terminal", "error"
]


DialogLifecycle = Literal["running", "completed", "archived"]
"""Where a dialog tree is in its life: ``.dialogs/run``, ``done`` or ``archive``."""


class RunState(Record):
    """The run state shown to users; ``blocked`` is derived from q4h/subdlg files, never trusted alone."""

    kind: RunStateKind = "idle"
    """idle, proceeding, stop_requested, interrupted, blocked, dead, terminal or error."""
    reason: str | None = None
    """interrupted: user_stop, emergency_stop, server_restart, system_stop; blocked: needs_human_input,
    waiting_for_subdialogs, needs_human_input_and_subdialogs; dead: declared_by_user, system."""
    detail: str | None = None
    """Human-readable detail (an error message, a note)."""


class AskedBack(Record):
    """The ask-back behind a tellask-back prompt, as the asking subdialog wrote it."""

    from_agent_id: str
    """Agent of the asking subdialog."""
    tellask_head: str
    """The ask-back's headline, verbatim (``@tellasker …``)."""
    tellask_body: str = ""
    """Its body, verbatim."""


class QueuedPrompt(Record):
    """A prompt accepted for a dialog but not yet recorded in its course (survives crashes)."""

    msg_id: str
    """Unique id; the course is checked for it before recording, so it is recorded once."""
    content: str
    """The text."""
    grammar: Literal["tellask", "markdown"] = "tellask"
    """``tellask`` text is parsed for calls (human input); ``markdown`` never is (system prompts)."""
    origin: Literal["user", "q4h_answer", "assignment", "tellask_back", "new_course", "diligence", "system"] = "user"
    """Who produced it."""
    question_id: str | None = None
    """For a Q4H answer: the question it answers."""
    from_dialog_id: str | None = None
    """For a tellask-back prompt: the subdialog asking."""
    call_id: str | None = None
    """For a tellask-back prompt: the asking call's id."""
    assignment: Assignment | None = None
    """For an assignment: the tellask as the caller wrote it (``content`` frames it for the model; the
    panel shows this instead). Absent before format v1 grew it: readers fall back to ``dialog.yaml``."""
    ask_back: AskedBack | None = None
    """For a tellask-back prompt: the ask-back as written (``content`` frames it for the model). Since v1."""
    queued_at: str
    """ISO time it was accepted."""


class InboundTellaskBack(Record):
    """A TYPE A ask-back: a reply obligation of this dialog, bound to (asker, callId).

    Obligations are served one at a time, oldest first. Serving starts when the generation that records
    the ask-back's prompt starts (one ``latest.yaml`` write records both); the reply is the dialog's final
    saying once the work it started while serving (subdialogs not in ``pendingBefore``, questions) has
    settled. Other prompts that open new obligations (user messages, other ask-backs, assignments) wait.
    """

    from_dialog_id: str
    """The subdialog that asked."""
    call_id: str
    """The asking call."""
    tellask_head: str
    """The ask-back headline (for the response record)."""
    serving_since: str | None = None
    """ISO time this dialog started answering it; None while its prompt is still queued."""
    pending_before: list[str] = Field(default_factory=list)
    """Call ids this dialog was already waiting on when serving started: not this obligation's work."""
    queued_before: list[str] = Field(default_factory=list)
    """Prompts already queued when serving started (say, the answer to an earlier question): they wait."""

    @property
    def msg_id(self) -> str:
        """The id of the prompt that carries the question (deterministic, so recovery finds it)."""
        return f"tb-{self.from_dialog_id}-{self.call_id}"


class LatestState(Record):
    """``latest.yaml``: the mutable state of one dialog."""

    v: int = STATE_FORMAT_VERSION
    """Format version."""
    status: DialogLifecycle = "running"
    """Seed: ``running``, ``completed`` or ``archived`` — the status directory the tree lives in (written from it)."""
    current_course: int = 1
    """Number of the course file being appended to (``course-NNN.jsonl``)."""
    last_modified: str
    """ISO time of the last change to this dialog."""
    generating: bool = False
    """True between a generation's start and finish records; a crash leaves it true."""
    needs_drive: bool = False
    """The scheduler should drive this dialog once it can (queued prompt, revival, resume)."""
    run_state: RunState = Field(default_factory=RunState)
    """Current run state."""
    queued_prompts: list[QueuedPrompt] = Field(default_factory=list)
    """Prompts queued in one write with this file's other state (a new subdialog's assignment, an ask-back
    with its obligation, a new course's prompt), until the queue log (``queue.jsonl``,
    ``store/queue_log.py``) takes them over; files before the log held the whole queue here. The queue
    is these (those the log never names, first), then the log's."""
    inbound_tellask_backs: list[InboundTellaskBack] = Field(default_factory=list)
    """Ask-backs from subdialogs this dialog is answering."""
    new_course_pending: bool = False
    """clear_mind ran: a new course starts when the current generation ends (or at recovery)."""
    disable_diligence_push: bool = True
    """Roots: whether Diligence Push is off."""
    diligence_push_remaining_budget: int = 0
    """Roots: pushes left before a forced Q4H."""
    title: str | None = None
    """What lists call the dialog: the first line of its first message, or the name a user gave it.
    Kept here (not in ``dialog.yaml``) so setting it from the first message costs no extra write: it
    rides on the write that queues that message. Lists show it before ``DialogMeta.title``."""


# ---------------------------------------------------------------- reminders.json


class Reminder(Record):
    """One dialog-scoped reminder."""

    id: str = ""
    """Stable id (``rem-…``): the reminder tools name a reminder by it. A file from before ids were used
    (reminders named by their number) loads with ``""``; the loader gives it one (``with_stable_ids``)."""
    content: str
    """Text shown to the agent before its last user message."""
    owner: str | None = None
    """Tool that owns and re-renders it, if any."""
    created_at: str = ""
    """ISO creation time."""


def new_reminder_id() -> str:
    return f"rem-{secrets.token_hex(4)}"


def with_stable_ids(reminders: list[Reminder]) -> tuple[list[Reminder], bool]:
    """Every reminder with an id of its own (a missing or repeated id gets a fresh one); True if any changed."""
    seen: set[str] = set()
    out: list[Reminder] = []
    changed = False
    for reminder in reminders:
        if not reminder.id.startswith("rem-") or reminder.id in seen:
            reminder = reminder.model_copy(update={"id": new_reminder_id()})
            changed = True
        seen.add(reminder.id)
        out.append(reminder)
    return out, changed


class RemindersFile(Record):
    """``reminders.json``."""

    v: int = STATE_FORMAT_VERSION
    """Format version."""
    reminders: list[Reminder] = Field(default_factory=list)
    """Reminders in display order."""
    updated_at: str
    """ISO time of the last change."""


# ---------------------------------------------------------------- q4h.yaml


class CallSiteRef(Record):
    """Where in the transcript a question was asked."""

    course: int
    """Course number."""
    message_index: int
    """Index of the asking message in that course's records."""


class HumanQuestion(Record):
    """One pending question for the human (Q4H)."""

    id: str
    """``q4h-<dialogId>-<callId>``; unique in the workspace."""
    tellask_head: str
    """The question headline (trimmed)."""
    body_content: str
    """The question body (trimmed)."""
    asked_at: str
    """ISO time."""
    call_id: str
    """callId of the ``!?@human`` tellask."""
    call_site_ref: CallSiteRef
    """Where it was asked."""
    kind: Literal["tellask", "elicitation"] = "tellask"
    """``tellask``: an ``!?@human`` call; the answer is queued into the dialog. ``elicitation``: an MCP
    server's request during a tool call; the answer goes back to the server, not into the dialog, and
    a question of this kind left after a restart has nobody waiting (it is dropped)."""


class Q4hFile(Record):
    """``q4h.yaml``: the index of this dialog's pending questions; deleted when empty."""

    v: int = STATE_FORMAT_VERSION
    """Format version."""
    questions: list[HumanQuestion] = Field(default_factory=list)
    """Pending questions, oldest first."""
    updated_at: str
    """ISO time of the last change."""


# ---------------------------------------------------------------- subdlg.yaml


class PendingSubdialog(Record):
    """One subdialog (or ask-back) this caller waits for."""

    subdialog_id: str
    """Self id of the awaited dialog (for TYPE A: the supdialog asked)."""
    agent_id: str
    """Agent of the awaited dialog."""
    call_type: Literal["A", "B", "C"]
    """A ask-back, B registered session, C fresh."""
    tellask_session: str | None = None
    """TYPE B session slug."""
    tellask_head: str
    """Headline of the call."""
    tellask_body: str = ""
    """Body of the call (lets recovery recreate a subdialog whose creation was cut short)."""
    call_id: str
    """callId of the call; the response is matched on (subdialogId, callId)."""
    created_at: str
    """ISO time."""
    fbr: bool = False
    """The awaited dialog is a tool-less ``@self`` subdialog."""
    collective_targets: list[str] | None = None
    """All targets of a collective tellask."""


class SubdlgFile(Record):
    """``subdlg.yaml``: what this caller is waiting for; deleted when empty."""

    v: int = STATE_FORMAT_VERSION
    """Format version."""
    pending: list[PendingSubdialog] = Field(default_factory=list)
    """Awaited dialogs."""
    updated_at: str
    """ISO time of the last change."""


# ---------------------------------------------------------------- response.yaml


class SubdialogResponse(Record):
    """``response.yaml``: the last response a subdialog produced for a call."""

    v: int = STATE_FORMAT_VERSION
    """Format version."""
    call_id: str
    """The call answered."""
    caller_dialog_id: str
    """Who it is for."""
    response: str
    """The answer text (the subdialog's last saying)."""
    status: Literal["completed", "failed"] = "completed"
    """failed: declared dead or errored."""
    completed_at: str
    """ISO time."""


# ---------------------------------------------------------------- registry.yaml


class RegistryEntry(Record):
    """One TYPE B session in a root's registry (``registry.yaml`` is a map ``agentId!session → entry``)."""

    subdialog_id: str
    """Self id of the registered subdialog."""
    agent_id: str
    """Its agent."""
    tellask_session: str
    """Its session slug."""
    created_at: str
    """ISO time of registration."""
    last_accessed: str | None = None
    """ISO time of the latest tellask to it."""
    locked: bool = False
    """Informational: being driven when written; reset at daemon start."""


REGISTRY_HEADER = "# dominds registry.yaml format v1: map of agentId!tellaskSession -> entry\n"
