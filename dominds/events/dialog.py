"""Events of a dialog's channel: generations and their streams, calls, questions, state."""

from __future__ import annotations

from typing import Any, Literal

from dominds.events.common import (
    DialogEvent,
    DialogIdent,
    Gen,
    PromptAskBack,
    PromptAssignment,
    Question,
    Reminder,
)


class GeneratingStart(Gen):
    """A generation started (the model is called)."""

    type: Literal["generating_start_evt"]


class GeneratingFinish(Gen):
    """A generation ended."""

    type: Literal["generating_finish_evt"]
    llmGenModel: str | None
    """Model that generated (``null`` when the provider was never called)."""
    status: Literal["ok", "error", "interrupted", "truncated"] | None = None
    """How it ended: ``truncated`` = cut by the output limit."""
    finishReason: str | None = None
    """Why a cut or stopped reply ended (``max_tokens``, ``context_window``, ``refusal``, ``content_filter``, ``stopped``, ``broken``)."""
    partial: bool | None = None
    """Output was produced before it broke off (kept, marked incomplete)."""


class EndOfUserSaying(Gen):
    """A queued prompt was recorded: sent just after the ``generating_start_evt`` of the generation that reads it."""

    type: Literal["end_of_user_saying_evt"]
    msgId: str
    """The prompt's id (a queued message leaves the queue with it)."""
    content: str
    """The text as the agent reads it."""
    grammar: Literal["tellask", "markdown"]
    """`tellask` text is parsed for calls (what people write); `markdown` never is (the runtime's prompts)."""
    origin: Literal["user", "q4h_answer", "assignment", "tellask_back", "new_course", "diligence", "system"]
    """Who produced it: the user, an answer to a question, a caller's assignment, a subdialog's ask-back, a new course, a Diligence Push, the runtime."""
    assignment: PromptAssignment | None = None
    """Only on an assignment: the caller's tellask as written (`fromAgentId`, `callerDialogId`, `callId`, `tellaskHead`, `tellaskBody`; `bodyHtml` is the body as sanitised HTML, added by the server), which the panel shows instead of `content`, the framed text the model reads. Absent for an old record whose assignment is not the subdialog's current one."""
    askBack: PromptAskBack | None = None
    """Only on an ask-back (`tellask_back`): the question as the asking subdialog wrote it (`fromAgentId`, `fromDialogId`, `callId`, `tellaskHead`, `tellaskBody`, `bodyHtml` added by the server), shown instead of the framed `content`. Absent in records written before it was kept."""


class ThinkingStart(Gen):
    """The model started reasoning (a thinking segment)."""

    type: Literal["thinking_start_evt"]


class ThinkingChunk(Gen):
    """More reasoning text."""

    type: Literal["thinking_chunk_evt"]
    chunk: str
    """More of the model's reasoning, as it streams."""


class ThinkingFinish(Gen):
    """The thinking segment ended."""

    type: Literal["thinking_finish_evt"]
    incomplete: Literal["stopped", "broken"] | None = None
    """The segment was cut (a stop, a broken stream); its text so far is kept."""


class SayingStart(Gen):
    """A saying segment (what the agent says) started."""

    type: Literal["saying_start_evt"]


class SayingFinish(Gen):
    """A saying segment ended: its full text and the HTML of each of its markdown runs."""

    type: Literal["saying_finish_evt"]
    content: str
    """The segment's whole text."""
    markdownHtml: list[str] | None = None
    """One sanitised HTML string per markdown run, in the order of its ``markdown_start_evt``s (added by the server)."""
    incomplete: Literal["stopped", "broken"] | None = None
    """The segment was cut (a stop, a broken stream); its text so far is kept."""


class MarkdownStart(Gen):
    """A markdown run of a saying started (a saying interleaves markdown runs and Tellask blocks)."""

    type: Literal["markdown_start_evt"]


class MarkdownChunk(Gen):
    """More of a markdown run."""

    type: Literal["markdown_chunk_evt"]
    chunk: str
    """More markdown text of the run (shown as plain text until the saying finishes)."""


class MarkdownFinish(Gen):
    """The markdown run ended."""

    type: Literal["markdown_finish_evt"]


class CallStart(Gen):
    """A Tellask block started in a saying."""

    type: Literal["teammate_call_start_evt"]
    validation: str
    """``valid``, or the parser's error code for a malformed block."""


class CallHeadlineChunk(Gen):
    """More of a Tellask block's headline."""

    type: Literal["teammate_call_headline_chunk_evt"]
    chunk: str
    """More of the call's headline (`@member …`)."""


class CallHeadlineFinish(Gen):
    """The headline ended."""

    type: Literal["teammate_call_headline_finish_evt"]


class CallBodyStart(Gen):
    """The block's body started."""

    type: Literal["teammate_call_body_start_evt"]


class CallBodyChunk(Gen):
    """More of the block's body."""

    type: Literal["teammate_call_body_chunk_evt"]
    chunk: str
    """More of the call's body (the `!?` lines)."""


class CallBodyFinish(Gen):
    """The body ended."""

    type: Literal["teammate_call_body_finish_evt"]


class CallFinish(Gen):
    """The Tellask block ended; its call runs when the generation ends."""

    type: Literal["teammate_call_finish_evt"]
    callId: str
    """Runtime call id (``<md5-8>.<course>.<genseq>.<segment>``); links to the call site use it."""


class FuncCallRequested(Gen):
    """The model called a tool (recorded before it runs)."""

    type: Literal["func_call_requested_evt"]
    funcId: str
    """The call's id (its result carries it as `id`; links to the call site use it)."""
    funcName: str
    """The tool."""
    arguments: str
    """The arguments as a JSON string (as the model wrote them)."""


class FuncResult(Gen):
    """A tool's result (recorded before it is published)."""

    type: Literal["func_result_evt"]
    id: str
    """The ``funcId`` of the call."""
    name: str
    """The tool."""
    content: str
    """What the tool returned (secrets redacted), or the error the model sees."""
    isError: bool
    """The call failed (bad arguments, a tool error)."""


class StreamError(Gen):
    """The generation failed (never persisted as such: a replay rebuilds it from the finish record)."""

    type: Literal["stream_error_evt"]
    error: str
    """What went wrong, in one sentence."""


class ContextHealth(Gen):
    """How full the context window was after a generation."""

    type: Literal["context_health_evt"]
    contextHealth: dict[str, Any]
    """How full the context window is (see driver/health.py)."""


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
