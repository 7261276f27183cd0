"""Events of one generation's stream: its start and end, thinking, saying, markdown runs, Tellask blocks, tool calls.

Each carries the generation's ``course`` and ``genseq`` (``Gen``); the dialog's other events (calls'
results, questions, run state, the queue) are in ``dialog.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from dominds.events.common import Gen, PromptAskBack, PromptAssignment


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
    inputTokens: int | None = None
    """Prompt tokens of this generation, cache reads and writes included (absent when the provider reported none)."""
    outputTokens: int | None = None
    """Output tokens of this generation, reasoning included."""
    reasoningTokens: int | None = None
    """Of ``outputTokens``, those spent on reasoning (when the provider reports them)."""


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
    """Only on an ask-back (`tellask_back`): the question as the asking subdialog wrote it (`fromAgentId`, `fromDialogId`, `callId`, `tellaskHead`, `tellaskBody`, `bodyHtml` added by the server), shown instead of the framed `content`. Records written before it was kept have it only when their framed `content` gives the words back for certain (they hash to `callId`)."""


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
    plain: bool | None = None
    """True: written in Tellask tool form, one markdown run, ``!?@`` lines are plain text (never calls)."""


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
    """``valid``, or the parser's error code for a malformed block (``invalid_tool_arguments``: a Tellask
    function call whose arguments were refused)."""
    form: Literal["text", "tools"] | None = None
    """``tools``: made with a Tellask function tool (named by ``toolName``), rendered like a text-form block;
    absent for a text-form block."""
    toolName: str | None = None
    """The Tellask function tool of a tool-form call (``tellask``, ``tellaskSessionless``, …)."""


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


class FuncProgress(Gen):
    """An MCP server reported progress on a tool call that is still running (live only, never
    persisted: a replay shows the call as it ended). At most one every 0.25 s per call, and the last."""

    type: Literal["func_progress_evt"]
    funcId: str
    """The ``funcId`` of the call."""
    progress: float
    """How far it got (the server's number; grows with each report)."""
    total: float | None = None
    """The number ``progress`` reaches when done, when the server knows it."""
    message: str | None = None
    """The server's words for the step it is at."""


class McpSampling(Gen):
    """An MCP server asked the member's model for a completion during a tool call, and got this
    (recorded first: ``mcp_sampling_record``)."""

    type: Literal["mcp_sampling_evt"]
    funcId: str
    """The ``funcId`` of the call during which the server asked."""
    server: str
    """The MCP server's id."""
    reply: str
    """What the model answered (empty when it could not)."""
    error: str | None = None
    """Why the model could not answer, when it could not."""


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
