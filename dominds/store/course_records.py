"""Records of ``course-NNN.jsonl``: one JSON object per line, each with ``type`` and ``ts``.

A course file starts with a ``course_start`` record carrying the format version. Records are
append-only; the reader (``jsonl.py``) ignores a torn last line and reports a bad line anywhere else.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from dominds.store.records import AskedBack, Assignment, Record

COURSE_FORMAT_VERSION = 1

IncompleteReason = Literal["stopped", "broken"]
"""Why a thinking/saying segment ended early: the user stopped the generation, or the stream broke."""
FinishReason = Literal[
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "refusal",
    "content_filter",
    "context_window",
    "pause",
    "broken",
    "stopped",
    "unknown",
]
"""Why a generation ended. ``end_turn``: the model finished; ``tool_use``: it called tools;
``max_tokens``: it hit the output limit; ``stop_sequence``; ``refusal`` / ``content_filter``: the
provider's safety systems ended it; ``context_window``: the context filled up mid-reply; ``pause``:
the provider paused a long turn; ``broken``: the stream failed after output began; ``stopped``: a
stop request; ``unknown``: the provider said nothing we recognise."""
TRUNCATING_FINISH_REASONS = frozenset({"max_tokens", "context_window"})
"""Finish reasons that cut the reply at a size limit (``status: truncated``)."""


class Usage(Record):
    """Token usage of one generation as the provider reported it (zeros when unknown)."""

    input_tokens: int = 0
    """Prompt tokens, excluding cache reads."""
    output_tokens: int = 0
    """Completion tokens (thinking included)."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's cache."""
    cache_write_long_tokens: int = 0
    """Of ``cache_write_tokens``, those written with the long lifetime (Anthropic's 1 h, OpenAI's 12 h),
    priced at the model's ``cache_write_long``. Since v1."""
    reasoning_tokens: int = 0
    """Of ``output_tokens``, those spent on reasoning (reported by OpenAI; 0 when unknown). Since v1."""
    available: bool = True
    """False when the provider reported nothing."""
    partial: bool = False
    """The counts stop where the stream broke or was stopped (input known from the first event,
    output as far as reported). Since v1."""


class CourseStartRecord(Record):
    """First line of a course file."""

    type: Literal["course_start"] = "course_start"
    ts: str
    """ISO time."""
    v: int = COURSE_FORMAT_VERSION
    """Course format version."""
    course: int
    """The course number."""
    reason: str | None = None
    """Why a new course began (``clear_mind``, ``context_health``)."""
    idle_clears: int = 0
    """How many courses in a row, ending with the one before this, the agent only cleared its mind in (no
    saying, no other tool call, no tellask, no prompt from someone): the loop guard's count
    (``driver/loop_guard.py``). 0 when absent (older files)."""


class HumanTextRecord(Record):
    """A prompt given to the agent: human input, a Q4H answer, an assignment or a system prompt."""

    type: Literal["human_text_record"] = "human_text_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation that consumed it."""
    msg_id: str
    """Unique id of the prompt (dedupes a prompt recorded before a crash)."""
    content: str
    """Text."""
    grammar: Literal["tellask", "markdown"] = "tellask"
    """Whether it was parsed for tellasks."""
    origin: str = "user"
    """user, q4h_answer, assignment, tellask_back, new_course, diligence or system."""
    question_id: str | None = None
    """Q4H answers: the question answered."""
    from_dialog_id: str | None = None
    """Tellask-back prompts: the asking subdialog."""
    call_id: str | None = None
    """Tellask-back prompts: the asking call."""
    assignment: Assignment | None = None
    """Assignments: the tellask as the caller wrote it (``content`` is the framed text the model reads).
    Since v1; absent in older records."""
    ask_back: AskedBack | None = None
    """Tellask-back prompts: the ask-back as the asker wrote it. Since v1; absent in older records, whose
    readers take it back from ``content`` when it hashes to ``call_id`` (``texts.words_of_tellask_back_text``)."""


class GenStartRecord(Record):
    """A generation began."""

    type: Literal["gen_start_record"] = "gen_start_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation number within the course (1-based)."""


class AgentThoughtRecord(Record):
    """One finished thinking segment."""

    type: Literal["agent_thought_record"] = "agent_thought_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation."""
    content: str
    """Thinking text."""
    provider_data: dict[str, Any] | None = None
    """Opaque provider data to send back (e.g. an Anthropic thinking signature)."""
    incomplete: IncompleteReason | None = None
    """Set when the segment was cut off before its end (the text is what had streamed). Since v1."""


class AgentWordsRecord(Record):
    """One finished saying segment (may contain tellask blocks)."""

    type: Literal["agent_words_record"] = "agent_words_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation."""
    content: str
    """Saying text, verbatim."""
    incomplete: IncompleteReason | None = None
    """Set when the segment was cut off before its end (the text is what had streamed). Since v1."""
    plain: bool = False
    """Written by a member in Tellask tool form (``tellask: tools``): ``!?@`` lines in it are plain text, not
    calls (replay and recovery do not parse it). Since v1; absent = parsed."""


class FuncCallRecord(Record):
    """A function call, persisted before the tool runs."""

    type: Literal["func_call_record"] = "func_call_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation."""
    id: str
    """Provider's call id."""
    name: str
    """Tool name."""
    arguments: dict[str, Any] | str
    """Parsed arguments, or the raw text when they were not a JSON object."""


class FuncResultRecord(Record):
    """A function result, persisted after the tool ran (or a recovery note if it may not have)."""

    type: Literal["func_result_record"] = "func_result_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation of the call."""
    id: str
    """Call id it answers."""
    name: str
    """Tool name."""
    content: str
    """Result text (what the model sees unless ``context_note`` is set)."""
    is_error: bool = False
    """The call failed or was refused."""
    interrupted: bool = False
    """The call did not finish: recorded at recovery (the daemon died while the tool ran) or when a stop
    cancelled it; the content says whether it may have run."""
    context_note: str | None = None
    """What the model sees instead of ``content``: a result too large for a context under pressure is
    replaced by this note (``driver/pressure.py``); ``content`` keeps the whole result for the panel.
    Since issue 32; absent in older records."""


class TellaskCallRecord(Record):
    """A tellask made with a function tool (the tool form; a text-form call's site is its saying segment),
    persisted before it runs. Its reply, note or answer is the tool call's result. Since v1."""

    type: Literal["tellask_call_record"] = "tellask_call_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation that made the call."""
    call_id: str
    """Runtime callId (as a text-form call's: the registry, replies and questions use it)."""
    form: Literal["tools"] = "tools"
    """How the call was made: ``tools`` (a function call). Text-form calls have no such record."""
    tool_call_id: str
    """The provider's id of the function call (the tool result answers it)."""
    tool_name: str
    """``tellask``, ``tellaskSessionless``, ``tellaskBack``, ``askHuman`` or ``freshBootsReasoning``."""
    arguments: dict[str, Any] | str
    """The call's arguments as the model gave them (raw text when not a JSON object)."""
    tellask_head: str
    """The headline the text form would have written (``@coder !tellaskSession s``); empty when refused."""
    tellask_body: str
    """``tellaskContent``."""


class TeammateCallResultRecord(Record):
    """The immediate outcome of a tellask call: dispatched, or refused with a note."""

    type: Literal["teammate_call_result_record"] = "teammate_call_result_record"
    ts: str
    """ISO time."""
    genseq: int | None = None
    """Generation that made the call."""
    call_id: str
    """callId."""
    responder_id: str
    """Target agent, or ``dominds`` for runtime notes."""
    tellask_head: str
    """Headline of the call."""
    status: Literal["pending", "completed", "failed"]
    """pending: waiting for a teammate; failed: refused (the note is the result)."""
    result: str
    """Text shown to the model and the user."""


class TeammateResponseRecord(Record):
    """A teammate's answer supplied to this (calling) dialog; exactly one per (calleeDialogId, callId)."""

    type: Literal["teammate_response_record"] = "teammate_response_record"
    ts: str
    """ISO time."""
    genseq: int | None = None
    """Generation that made the call."""
    call_id: str
    """callId answered."""
    call_type: Literal["A", "B", "C"] = "C"
    """Call type."""
    responder_id: str
    """Agent that answered."""
    callee_dialog_id: str
    """Dialog that answered."""
    tellask_head: str
    """Headline of the original call."""
    status: Literal["completed", "failed"]
    """failed: declared dead or errored."""
    response: str
    """The raw answer."""
    result: str
    """The formatted text the model sees."""
    agent_id: str
    """Agent of this (calling) dialog."""
    origin_member_id: str
    """Agent that made the call."""


class SubdialogCreatedRecord(Record):
    """A tellask created or re-used a subdialog (lets the UI link the call to it)."""

    type: Literal["subdialog_created_record"] = "subdialog_created_record"
    ts: str
    """ISO time."""
    genseq: int | None = None
    """Generation that made the call."""
    call_id: str
    """callId."""
    call_type: Literal["B", "C"]
    """Call type."""
    subdialog_id: str
    """Self id of the subdialog."""
    target_agent_id: str
    """Its agent."""
    tellask_head: str
    """Headline."""
    tellask_body: str
    """Body."""
    reused: bool = False
    """TYPE B hit in the registry."""


class RunMarkerRecord(Record):
    """A visible marker: the dialog was interrupted or resumed."""

    type: Literal["run_marker_record"] = "run_marker_record"
    ts: str
    """ISO time."""
    kind: Literal["interrupted", "resumed"]
    """Marker kind."""
    reason: str | None = None
    """Why."""


class McpSamplingRecord(Record):
    """An MCP server asked the dialog's model for a completion during a tool call (MCP sampling, on a
    server opted in with ``sampling: true``), and what the model answered. Not part of the model's
    context: the answer went to the server, whose tool result is in the ``func_result_record``."""

    type: Literal["mcp_sampling_record"] = "mcp_sampling_record"
    ts: str
    """ISO time (when the answer came)."""
    genseq: int = 0
    """The generation whose function call it served."""
    server: str
    """Id of the MCP server (``.minds/mcp.yaml``)."""
    call_id: str
    """The function call during which the server asked."""
    system_prompt: str = ""
    """The server's system prompt."""
    messages: list[dict[str, str]] = Field(default_factory=list)
    """The server's messages: ``{role, text}`` each (non-text content is described in the text)."""
    reply: str = ""
    """What the model answered (empty on an error)."""
    provider: str | None = None
    """Provider key used."""
    model: str | None = None
    """Model key used."""
    usage: Usage | None = None
    """Tokens reported for it."""
    error: str | None = None
    """Why no answer was given, when none was."""


class GenFinishRecord(Record):
    """A generation ended (always written, also on errors and stops)."""

    type: Literal["gen_finish_record"] = "gen_finish_record"
    ts: str
    """ISO time."""
    genseq: int
    """Generation."""
    status: Literal["ok", "truncated", "interrupted", "error"] = "ok"
    """How it ended: ``truncated`` = the reply reached the output limit (``max_tokens``) or the context
    window and was cut there; ``interrupted`` = stopped (or the daemon died); ``error`` = failed."""
    finish_reason: FinishReason | None = None
    """Why the model stopped, in provider-neutral terms (``None`` in records older than the field and
    when no provider was reached)."""
    partial: bool = False
    """The reply is incomplete: cut by the output limit, a broken stream or a stop after output began."""
    error: str | None = None
    """Error text when not ok."""
    provider: str | None = None
    """Provider key used."""
    model: str | None = None
    """Model key used."""
    usage: Usage | None = None
    """Tokens reported for this generation."""
    duration_ms: int | None = None
    """Wall time of the provider call."""
    streaming: bool | None = None
    """Whether the request asked for a stream (the member's ``streaming``); absent before one was made."""
    messages_count: int | None = None
    """Messages sent to the provider, the system prompt included."""
    response_chars: int | None = None
    """Characters the model produced: thinking, saying and function-call arguments."""
    context_health: dict[str, Any] | None = None
    """Context-health snapshot after this generation."""
    critical_streak: int | None = None
    """Measured generations in a row at the critical context level, this one included (0 below critical;
    absent when nothing was measured, and in records older than the field). The countdown to the
    runtime's new course is read from it, so a restart mid-countdown goes on where it was."""


CourseRecord = Annotated[
    CourseStartRecord
    | HumanTextRecord
    | GenStartRecord
    | AgentThoughtRecord
    | AgentWordsRecord
    | FuncCallRecord
    | FuncResultRecord
    | TellaskCallRecord
    | TeammateCallResultRecord
    | TeammateResponseRecord
    | SubdialogCreatedRecord
    | RunMarkerRecord
    | McpSamplingRecord
    | GenFinishRecord,
    Field(discriminator="type"),
]

COURSE_RECORD_ADAPTER: TypeAdapter[CourseRecord] = TypeAdapter(CourseRecord, config=ConfigDict(defer_build=True))
