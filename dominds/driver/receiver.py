"""The streaming receiver of one generation.

It enforces the thinking/saying contract (segments alternate, never overlap; DESIGN §4.6), feeds each
saying segment live to a fresh Tellask parser (one per segment, as replay does), publishes stream events,
and persists each finished segment as one record. A segment still open when the stream breaks or is
stopped is persisted too, as far as it had streamed, marked ``incomplete`` (``keep_incomplete``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.subdialogs import CallToRun, runtime_call_id
from dominds.ids import now_iso
from dominds.llm.base import StreamProtocolError
from dominds.store.course_records import (
    AgentThoughtRecord,
    AgentWordsRecord,
    GenFinishRecord,
    IncompleteReason,
    Usage,
)
from dominds.tellask import TellaskParser
from dominds.tellask_events import (
    BodyChunk,
    BodyFinish,
    BodyStart,
    CallFinish,
    CallStart,
    HeadlineChunk,
    HeadlineFinish,
    MarkdownChunk,
    MarkdownFinish,
    MarkdownStart,
    ParserEvent,
)
from dominds.textcheck import join_surrogates, scrub


@dataclass
class FuncCallRequest:
    call_id: str
    name: str
    arguments_json: str


@dataclass
class DialogReceiver:
    dialog: Dialog
    genseq: int
    calls: list[CallToRun] = field(default_factory=list)
    func_calls: list[FuncCallRequest] = field(default_factory=list)
    streamed_anything: bool = False
    response_chars: int = 0
    """Characters produced so far (thinking, saying, function-call arguments)."""
    _active: str | None = None
    _text: list[str] = field(default_factory=list)
    _parser: TellaskParser | None = None
    _segment: int = 0
    _carry: str = ""
    """A high surrogate that ended the last chunk: its low half may start the next one."""
    usage: Usage | None = None
    """The last usage the provider reported while streaming (kept when the stream breaks or is stopped)."""
    plain: bool = False
    """Tellask tool form only: saying is plain markdown, never parsed for ``!?@`` calls."""

    def _gen(self) -> dict[str, Any]:
        return {"course": self.dialog.latest.current_course, "genseq": self.genseq}

    def _begin(self, kind: str) -> None:
        if self._active is not None:
            raise StreamProtocolError(f"{kind} segment started while a {self._active} segment is still open")
        self._active = kind
        self._text = []
        # The same list: late joiners read the chunks so far (a stopped generation may have left one)
        self.dialog.streaming_text[kind] = self._text
        self.streamed_anything = True

    def _end(self, kind: str) -> str:
        if self._active != kind:
            raise StreamProtocolError(f"{kind} segment finished but {self._active or 'no'} segment is open")
        self._active = None
        self.dialog.streaming_text.pop(kind, None)
        if self._carry:  # a high surrogate never completed
            self._text.append(scrub(self._carry))
            self._carry = ""
        return "".join(self._text)

    def _add(self, kind: str, text: str) -> str:
        """Keep a chunk; returns it as stored and published (surrogate pairs joined, lone halves U+FFFD)."""
        if self._active != kind:
            raise StreamProtocolError(f"{kind} chunk outside a {kind} segment")
        text, self._carry = join_surrogates(self._carry + text)
        self._text.append(text)  # also what late joiners read (``Dialog.streaming_text``)
        self.response_chars += len(text)
        return text

    async def thinking_start(self) -> None:
        self._begin("thinking")
        self.dialog.publish({"type": "thinking_start_evt", **self._gen()})

    async def thinking_chunk(self, text: str) -> None:
        text = self._add("thinking", text)
        self.dialog.publish({"type": "thinking_chunk_evt", "chunk": text, **self._gen()})

    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None:
        self._finish_thinking(provider_data, None)

    def _finish_thinking(self, provider_data: dict[str, Any] | None, incomplete: IncompleteReason | None) -> None:
        content = self._end("thinking")
        self.dialog.append(
            AgentThoughtRecord(
                ts=now_iso(), genseq=self.genseq, content=content, provider_data=provider_data, incomplete=incomplete
            ),
            sync=False,
        )
        self.dialog.publish({"type": "thinking_finish_evt", **_incomplete(incomplete), **self._gen()})

    async def saying_start(self) -> None:
        self._begin("saying")
        self._parser = None if self.plain else TellaskParser()
        self._segment += 1
        self.dialog.publish({"type": "saying_start_evt", **self._gen()})
        if self.plain:
            self.dialog.publish({"type": "markdown_start_evt", **self._gen()})

    async def saying_chunk(self, text: str) -> None:
        text = self._add("saying", text)
        if self._parser is None:
            self.dialog.publish({"type": "markdown_chunk_evt", "chunk": text, **self._gen()})
        else:
            self._publish_parser_events(self._parser.feed(text))

    async def saying_finish(self) -> None:
        self._finish_saying(None)

    def _finish_saying(self, incomplete: IncompleteReason | None) -> None:
        content = self._end("saying")
        if self._parser is None:
            self.dialog.publish({"type": "markdown_finish_evt", **self._gen()})
        else:
            self._publish_parser_events(self._parser.finish())
        self._parser = None
        self.dialog.append(
            AgentWordsRecord(ts=now_iso(), genseq=self.genseq, content=content, incomplete=incomplete, plain=self.plain),
            sync=False,
        )
        self.dialog.publish(
            {"type": "saying_finish_evt", "content": content, **_plain(self.plain), **_incomplete(incomplete), **self._gen()}
        )

    async def usage_so_far(self, usage: Usage) -> None:
        self.usage = usage

    def keep_incomplete(self, reason: IncompleteReason) -> None:
        """Persist the segment the stream was in when it broke or was stopped, marked ``incomplete``.

        The driver runs neither the tellasks nor the function calls of such a generation."""
        if self._active == "thinking":
            self._finish_thinking(None, reason)
        elif self._active == "saying":
            self._finish_saying(reason)

    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None:
        if self._active is not None:
            raise StreamProtocolError(f"function call {name!r} inside an open {self._active} segment")
        self.streamed_anything = True
        self.response_chars += len(arguments_json)
        call_id = scrub(call_id) or "call"
        taken = {c.call_id for c in self.func_calls}
        if call_id in taken:  # a server that repeats an id within one reply: each call keeps its own result
            call_id = next(f"{call_id}-{n}" for n in range(2, len(taken) + 3) if f"{call_id}-{n}" not in taken)
        self.func_calls.append(FuncCallRequest(call_id, scrub(name), scrub(arguments_json)))

    def check_closed(self) -> None:
        if self._active is not None:
            raise StreamProtocolError(f"the stream ended inside an open {self._active} segment")

    def _publish_parser_events(self, events: list[ParserEvent]) -> None:
        course = self.dialog.latest.current_course
        for event in events:
            if isinstance(event, CallFinish):
                call_id = runtime_call_id(event.call.call_id, course, self.genseq, self._segment)
                self.calls.append(CallToRun(event.call, call_id))
        for payload in parser_event_payloads(events, course, self.genseq, self._segment):
            self.dialog.publish(payload)


def _plain(plain: bool) -> dict[str, Any]:
    return {"plain": True} if plain else {}


def plain_fields(record: AgentWordsRecord) -> dict[str, Any]:
    """``plain`` of a saying finish event (live and in replay): a tool-form member's unparsed saying."""
    return _plain(record.plain)


def _incomplete(reason: IncompleteReason | None) -> dict[str, Any]:
    return {} if reason is None else {"incomplete": reason}


def incomplete_fields(record: AgentThoughtRecord | AgentWordsRecord) -> dict[str, Any]:
    """``incomplete`` of a thinking/saying finish event (live and in replay), when the segment was cut."""
    return _incomplete(record.incomplete)


def finish_event_fields(finish: GenFinishRecord) -> dict[str, Any]:
    """What ``generating_finish_evt`` says about how a generation ended (live and in replay)."""
    fields: dict[str, Any] = {"llmGenModel": finish.model, "status": finish.status}
    if finish.usage is not None and finish.usage.available:
        fields["inputTokens"] = finish.usage.input_tokens + finish.usage.cache_read_tokens + finish.usage.cache_write_tokens
        fields["outputTokens"] = finish.usage.output_tokens
        if finish.usage.reasoning_tokens:
            fields["reasoningTokens"] = finish.usage.reasoning_tokens
    if finish.finish_reason is not None:
        fields["finishReason"] = finish.finish_reason
    if finish.partial:
        fields["partial"] = True
    return fields


def parser_event_payloads(
    events: Iterable[ParserEvent], course: int, genseq: int, segment: int
) -> list[dict[str, Any]]:
    """Wire payloads of Tellask parser events (same names and fields as ``DialogReceiver``)."""
    out: list[dict[str, Any]] = []
    gen = {"course": course, "genseq": genseq}
    for event in events:
        if isinstance(event, MarkdownStart):
            out.append({"type": "markdown_start_evt", **gen})
        elif isinstance(event, MarkdownChunk):
            out.append({"type": "markdown_chunk_evt", "chunk": event.text, **gen})
        elif isinstance(event, MarkdownFinish):
            out.append({"type": "markdown_finish_evt", **gen})
        elif isinstance(event, CallStart):
            out.append({"type": "teammate_call_start_evt", "validation": event.error or "valid", **gen})
        elif isinstance(event, HeadlineChunk):
            out.append({"type": "teammate_call_headline_chunk_evt", "chunk": event.text, **gen})
        elif isinstance(event, HeadlineFinish):
            out.append({"type": "teammate_call_headline_finish_evt", **gen})
        elif isinstance(event, BodyStart):
            out.append({"type": "teammate_call_body_start_evt", **gen})
        elif isinstance(event, BodyChunk):
            out.append({"type": "teammate_call_body_chunk_evt", "chunk": event.text, **gen})
        elif isinstance(event, BodyFinish):
            out.append({"type": "teammate_call_body_finish_evt", **gen})
        elif isinstance(event, CallFinish):
            call_id = runtime_call_id(event.call.call_id, course, genseq, segment)
            out.append({"type": "teammate_call_finish_evt", "callId": call_id, **gen})
    return out
