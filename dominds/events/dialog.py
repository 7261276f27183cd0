"""Events of a dialog's channel outside a generation's stream: calls' results and subdialogs, run state,
questions, reminders, courses, the Taskdoc, the prompt queue, workflow notes (the stream is ``generation.py``)."""

from __future__ import annotations

from typing import Any, Literal

from dominds.events.common import DialogEvent, DialogIdent, Question, Reminder


class CallResponse(DialogEvent):
    """The inline result of a call (a refusal note, for instance)."""

    type: Literal["teammate_call_response_evt"]
    course: int
    """Course of the call."""
    calling_genseq: int
    """Generation that made the call (the reference's name)."""
    responderId: str
    """`dominds` for a note of the runtime, else the member."""
    tellaskHead: str
    """The call's headline."""
    status: Literal["pending", "completed", "failed"]
    result: str
    """The note (why a call was refused, for instance)."""
    callId: str
    """The call (see `teammate_call_finish_evt`)."""


class SubdialogCreated(DialogEvent):
    """A call created (or reused) a subdialog. Broadcast."""

    type: Literal["subdialog_created_evt"]
    course: int
    """Course of the call."""
    genseq: int
    """Generation that made the call."""
    parentDialog: DialogIdent
    """The calling dialog."""
    subDialog: DialogIdent
    """The subdialog that answers."""
    targetAgentId: str
    """The member it runs as."""
    tellaskHead: str
    """The call's headline."""
    tellaskBody: str
    """The call's body."""
    callId: str
    """The call."""
    callType: str
    """`A` (ask-back), `B` (a session: `!tellaskSession`) or `C` (a fresh subdialog)."""
    reused: bool
    """A session (`!tellaskSession`) that already existed took the call."""


class TeammateResponse(DialogEvent):
    """A teammate's answer reached its caller."""

    type: Literal["teammate_response_evt"]
    course: int
    """Course of the caller the answer is recorded in."""
    responderId: str
    """The member that answered."""
    calleeDialogId: str
    """The answering subdialog (also as `calleeDialog`)."""
    calleeDialog: DialogIdent
    """The answering subdialog."""
    tellaskHead: str
    """The call's headline."""
    status: Literal["completed", "failed"]
    """`failed`: the subdialog failed, died or was re-assigned; `result` says why."""
    result: str
    """A one-line summary for the caller."""
    response: str
    """The answer (markdown)."""
    responseHtml: str | None = None
    """Sanitised HTML of ``response`` (added by the server)."""
    agentId: str
    """The caller's member."""
    callId: str
    """The call it answers."""
    originMemberId: str
    """The member that made the call."""


class RunStateEvent(DialogEvent):
    """Broadcast."""

    type: Literal["dlg_run_state_evt"]
    runState: dict[str, Any]
    """``{kind, reason?, detail?}``; ``kind``: idle, proceeding, stop_requested, interrupted, blocked, dead, terminal, error."""


class RunStateMarker(DialogEvent):
    """Broadcast. Also a transcript line."""

    type: Literal["dlg_run_state_marker_evt"]
    kind: Literal["interrupted", "resumed"]
    """What happened to the dialog's run."""
    reason: str | None = None
    """Why it was interrupted (`user_stop`, `server_shutdown`, `system_stop`, …)."""


class NewQuestion(DialogEvent):
    """Broadcast."""

    type: Literal["new_q4h_asked"]
    question: Question
    """The question, as `get_q4h_state` lists it."""


class QuestionAnswered(DialogEvent):
    """Broadcast (also when a question is withdrawn: its dialog died or started a new course)."""

    type: Literal["q4h_answered"]
    questionId: str
    """The question that is no longer pending."""
    selfId: str
    """The dialog that asked it."""


class QuestionsCount(DialogEvent):
    """Broadcast."""

    type: Literal["questions_count_update"]
    previousCount: int
    """Pending questions of the dialog before."""
    questionCount: int
    """Pending questions of the dialog now."""
    course: int
    """The dialog's current course."""


class RemindersEvent(DialogEvent):
    """The dialog's reminders changed (also the reply to `display_reminders`)."""

    type: Literal["full_reminders_update"]
    reminders: list[Reminder]
    """Every reminder of the dialog, in order."""


class CourseUpdate(DialogEvent):
    """A new course started; in a replay it comes first and says how many events follow."""

    type: Literal["course_update"]
    course: int
    """The course now shown (a new one live; the replayed one in a replay)."""
    totalCourses: int
    """How many courses the dialog has."""
    eventCount: int | None = None
    """In a replay: how many events of that course follow."""
    fromRecord: int | None = None
    """In a replay: the first record of the course the page holds (0: the course's beginning) **(ours)**."""
    toRecord: int | None = None
    """In a replay: the record after the page's last (`totalRecords`: the page reaches the course's end) **(ours)**."""
    totalRecords: int | None = None
    """In a replay: how many records the course has now **(ours)**."""


class DiligenceBudget(DialogEvent):
    """A Diligence Push was given (the root was told to keep going)."""

    type: Literal["diligence_budget_evt"]
    maxInjectCount: int
    """Pushes allowed (`diligence_push_max`)."""
    injectedCount: int
    """Pushes given so far."""
    remainingCount: int
    """Pushes left."""
    disableDiligencePush: bool
    """Diligence Push is off for this dialog."""


class TaskdocUpdated(DialogEvent):
    """The dialog's Taskdoc changed (``change_mind``, or on disk)."""

    type: Literal["taskdoc_updated"]
    taskDocPath: str
    """The Taskdoc package (rtws-relative)."""
    file: str | None = None
    """The section file ``change_mind`` wrote."""
    origin: Literal["disk"] | None = None
    """``disk``: a hand edit (or the panel's editor) seen by the daemon's watcher."""


class PromptQueued(DialogEvent):
    """A user message or an answer was queued (persisted); it stays queued until the ``end_of_user_saying_evt`` with the same ``msgId``."""

    type: Literal["prompt_queued_evt"]
    msgId: str
    """The prompt's id."""
    content: str
    """The text as it will be read."""
    origin: Literal["user", "q4h_answer"]
    """A user message, or an answer waiting for the dialog's other questions."""
    queuedAt: str
    """When it was accepted (ISO 8601)."""
    questionId: str | None
    """The question an answer answers."""
    cancellable: bool
    """A user message can be taken back (``cancel_queued_msg``) until it is read."""


class PromptCancelled(DialogEvent):
    """A queued user message was taken back before any generation read it."""

    type: Literal["queued_prompt_cancelled_evt"]
    msgId: str
    """The message taken back; no generation will read it."""


class WorkflowNote(DialogEvent):
    """A note of a workflow run's conductor, shown in its transcript."""

    type: Literal["workflow_note_evt"]
    content: str
    """The note."""
