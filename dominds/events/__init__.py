"""Typed models of every message the daemon sends on its websocket (docs/protocol.md §5 is generated from them).

Like the stored records (``store/records.py``), each outgoing message is a pydantic model whose fields
carry their documentation. The engine publishes plain dicts (cheap, and published from many places);
the server's edge checks each outgoing frame against its model when ``DOMINDS_CHECK_EVENTS=1`` (every
test run sets it, so an undocumented field or event fails a test), and the reference section of
docs/protocol.md is generated from these models (``dominds/server/protocol_doc.py``;
``tests/server/test_protocol_doc.py`` checks it is current).

Field names are the wire's (camelCase, plus the reference implementation's ``calling_genseq``).
Models forbid unknown fields; optional fields are absent rather than ``null`` unless stated.
"""

from __future__ import annotations

from dominds.events.common import ChannelEvent, DialogEvent, DialogIdent, Gen, GlobalEvent, Reply, WireModel
from dominds.events.dialog import (
    CallResponse,
    CourseUpdate,
    DiligenceBudget,
    NewQuestion,
    PromptCancelled,
    PromptQueued,
    QuestionAnswered,
    QuestionsCount,
    RemindersEvent,
    RunStateEvent,
    RunStateMarker,
    SubdialogCreated,
    TaskdocUpdated,
    TeammateResponse,
    WorkflowNote,
)
from dominds.events.generation import (
    CallBodyChunk,
    CallBodyFinish,
    CallBodyStart,
    CallFinish,
    CallHeadlineChunk,
    CallHeadlineFinish,
    CallStart,
    ContextHealth,
    EndOfUserSaying,
    FuncCallRequested,
    FuncProgress,
    FuncResult,
    GeneratingFinish,
    GeneratingStart,
    MarkdownChunk,
    MarkdownFinish,
    MarkdownStart,
    McpSampling,
    SayingFinish,
    SayingStart,
    StreamError,
    ThinkingChunk,
    ThinkingFinish,
    ThinkingStart,
)
from dominds.events.replies import (
    Ack,
    DialogReady,
    DialogRetitled,
    DialogsCreated,
    DialogsMoved,
    ErrorReply,
    GlobalReset,
    ProblemsSnapshot,
    QuestionsState,
    TaskdocContent,
    TeamConfigUpdated,
    TotTree,
    UiLanguageSet,
    Welcome,
)

__all__ = [
    "ChannelEvent",
    "DialogEvent",
    "DialogIdent",
    "Gen",
    "GlobalEvent",
    "Reply",
    "WireModel",
    "GeneratingStart",
    "GeneratingFinish",
    "EndOfUserSaying",
    "ThinkingStart",
    "ThinkingChunk",
    "ThinkingFinish",
    "SayingStart",
    "SayingFinish",
    "MarkdownStart",
    "MarkdownChunk",
    "MarkdownFinish",
    "CallStart",
    "CallHeadlineChunk",
    "CallHeadlineFinish",
    "CallBodyStart",
    "CallBodyChunk",
    "CallBodyFinish",
    "CallFinish",
    "FuncCallRequested",
    "FuncProgress",
    "McpSampling",
    "FuncResult",
    "StreamError",
    "ContextHealth",
    "CallResponse",
    "SubdialogCreated",
    "TeammateResponse",
    "RunStateEvent",
    "RunStateMarker",
    "NewQuestion",
    "QuestionAnswered",
    "QuestionsCount",
    "RemindersEvent",
    "CourseUpdate",
    "DiligenceBudget",
    "TaskdocUpdated",
    "PromptQueued",
    "PromptCancelled",
    "WorkflowNote",
    "DialogsCreated",
    "DialogsMoved",
    "DialogRetitled",
    "TeamConfigUpdated",
    "ProblemsSnapshot",
    "TotTree",
    "Welcome",
    "DialogReady",
    "Ack",
    "ErrorReply",
    "QuestionsState",
    "UiLanguageSet",
    "GlobalReset",
    "TaskdocContent",
    "CHANNEL_EVENTS",
    "GLOBAL_EVENTS",
    "REPLIES",
    "MODELS",
]

CHANNEL_EVENTS: tuple[type[WireModel], ...] = (
    GeneratingStart, GeneratingFinish, EndOfUserSaying, ThinkingStart, ThinkingChunk, ThinkingFinish,
    SayingStart, SayingFinish, MarkdownStart, MarkdownChunk, MarkdownFinish, CallStart, CallHeadlineChunk,
    CallHeadlineFinish, CallBodyStart, CallBodyChunk, CallBodyFinish, CallFinish, FuncCallRequested,
    FuncProgress, McpSampling, FuncResult, StreamError, ContextHealth, CallResponse, SubdialogCreated, TeammateResponse, RunStateEvent,
    RunStateMarker, NewQuestion, QuestionAnswered, QuestionsCount, RemindersEvent, CourseUpdate,
    DiligenceBudget, TaskdocUpdated, PromptQueued, PromptCancelled, WorkflowNote,
)  # fmt: skip
GLOBAL_EVENTS: tuple[type[WireModel], ...] = (
    DialogsCreated, DialogsMoved, DialogRetitled, TeamConfigUpdated, ProblemsSnapshot, TotTree,
)  # fmt: skip
REPLIES: tuple[type[WireModel], ...] = (
    Welcome, DialogReady, Ack, ErrorReply, QuestionsState, UiLanguageSet, GlobalReset, TaskdocContent,
)  # fmt: skip
MODELS: dict[str, type[WireModel]] = {
    model.model_fields["type"].annotation.__args__[0]: model  # type: ignore[union-attr]
    for model in (*CHANNEL_EVENTS, *GLOBAL_EVENTS, *REPLIES)
}
"""``type`` → model of every message the daemon sends on ``/ws``."""
