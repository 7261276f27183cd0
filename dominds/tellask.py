"""The Tellask parser: split saying text into markdown and `!?@…` call blocks, while it streams.

Line rules (full grammar in `docs/tellask.md`):
- a line whose first two characters are `!?` is a tellask line; any other line (an empty one too) is
  markdown and ends the current block;
- the first line of a block is the headline, further `!?@…` lines extend it until the first other
  `!?` line switches to the body, which then takes every line of the block.

The parser is pure (stdlib only), never raises on content, and its merged output does not depend on how
the input is split into chunks. Use one `TellaskParser` per saying segment: the callId counter starts
at 0 in each, which is what replay of a persisted segment does too.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

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
    MarkdownSegment,
    MarkdownStart,
    ParserEvent,
    Segment,
    build_tellask_call,
)
from dominds.tellask_headline import (
    is_mention_char,
    validate_headline_start,
)

_TEXT_EVENTS = (MarkdownChunk, HeadlineChunk, BodyChunk)


class _Line(enum.Enum):
    START = enum.auto()  # nothing of the current line consumed yet (except a held '!')
    MARKDOWN = enum.auto()
    ROLE_PENDING = enum.auto()  # after `!?` in the headline phase: the next char decides headline/body
    HEADLINE = enum.auto()
    BODY = enum.auto()


@dataclass
class _OpenCall:
    headline_parts: list[str] = field(default_factory=list)
    body_parts: list[str] = field(default_factory=list)
    # First-line text kept back until the mention id is decided, because `CallStart(error)` must come
    # before any headline text.
    held: str = ""
    held_scanned: int = 1  # `held[1:held_scanned]` is known to be mention chars
    validated: bool = False
    in_body: bool = False


class TellaskParser:
    """Streaming, line-based parser; one instance per saying segment.

    `feed` returns the events the chunk made certain; text is never reordered, and only what is needed
    to decide a line's kind is held back (a `!` at column 0, the first line until its mention id ends).
    `finish` flushes at end of input. Within one `feed`, adjacent text events of one kind are merged.
    """

    def __init__(self) -> None:
        self._events: list[ParserEvent] = []
        self._line = _Line.START
        self._bang_held = False  # a '!' at column 0 waiting for the next char: `!?` or markdown
        self._markdown_open = False
        self._call: _OpenCall | None = None
        self._calls_done = 0
        self._finished = False

    def feed(self, chunk: str) -> list[ParserEvent]:
        if self._finished:
            raise RuntimeError("TellaskParser.feed() after finish(); use a new parser per saying segment")
        pos = 0
        while pos < len(chunk):
            if self._line is _Line.START:
                pos = self._line_start(chunk, pos)
            elif self._line is _Line.ROLE_PENDING:
                self._decide_role(chunk[pos])
            else:
                newline = chunk.find("\n", pos)
                end = len(chunk) if newline < 0 else newline + 1
                self._line_text(chunk[pos:end])
                pos = end
                if newline >= 0:
                    self._line = _Line.START
        return self._take()

    def finish(self) -> list[ParserEvent]:
        """End of input: resolve a held `!`, close the open block and markdown. Idempotent."""
        if self._finished:
            return []
        self._finished = True
        if self._line is _Line.START and self._bang_held:
            self._bang_held = False  # (tidy only: a finished parser never reads it again, so `True` is equivalent)
            self._begin_markdown_line()
            self._markdown("!")
        # A trailing bare `!?` (ROLE_PENDING, or BODY with nothing after it) adds no text: only a
        # newline would have made it an empty body line.
        self._end_call()
        self._close_markdown()
        return self._take()

    # -- line kinds ---------------------------------------------------------------------------------

    def _line_start(self, chunk: str, pos: int) -> int:
        """Decide the kind of a new line; returns the position of the first unconsumed char."""
        ch = chunk[pos]
        if not self._bang_held:
            if ch == "!":
                self._bang_held = True
                return pos + 1
            self._begin_markdown_line()
            return pos
        self._bang_held = False
        if ch == "?":
            self._begin_call_line()
            return pos + 1
        self._begin_markdown_line()
        self._markdown("!")
        return pos

    def _begin_markdown_line(self) -> None:
        self._end_call()
        self._line = _Line.MARKDOWN

    def _begin_call_line(self) -> None:
        self._close_markdown()
        if self._call is None:
            self._call = _OpenCall()
            self._line = _Line.HEADLINE  # a block's first line is its headline, whatever follows `!?`
        elif self._call.in_body:
            self._line = _Line.BODY
        else:
            self._line = _Line.ROLE_PENDING

    def _decide_role(self, first_char: str) -> None:
        if first_char == "@":
            self._line = _Line.HEADLINE
            return
        self._emit(HeadlineFinish())
        self._emit(BodyStart())
        assert self._call is not None
        self._call.in_body = True
        self._line = _Line.BODY

    def _line_text(self, text: str) -> None:
        if self._line is _Line.MARKDOWN:
            self._markdown(text)
            return
        call = self._call
        assert call is not None
        if self._line is _Line.BODY:
            call.body_parts.append(text)
            self._emit(BodyChunk(text))
        elif call.validated:
            call.headline_parts.append(text)
            self._emit(HeadlineChunk(text))
        else:
            call.held += text
            if self._first_line_decided(call):
                self._validate(call)

    # -- calls --------------------------------------------------------------------------------------

    @staticmethod
    def _first_line_decided(call: _OpenCall) -> bool:
        """True once more text can no longer change the first line's verdict (it can inside `@<id>`)."""
        held = call.held
        if not held.startswith("@"):
            return bool(held)
        # Scan only the new text so a long id fed char by char stays linear.
        scanned = call.held_scanned
        while scanned < len(held) and is_mention_char(held[scanned]):
            scanned += 1
        call.held_scanned = scanned
        return scanned < len(held)

    def _validate(self, call: _OpenCall) -> None:
        first_mention, error = validate_headline_start(call.held)
        call.validated = True
        self._emit(CallStart(error, first_mention))
        if call.held:
            call.headline_parts.append(call.held)
            self._emit(HeadlineChunk(call.held))
            call.held = ""

    def _end_call(self) -> None:
        call = self._call
        if call is None:
            return
        if not call.validated:
            self._validate(call)  # end of block: the first line is complete now
        self._emit(BodyFinish() if call.in_body else HeadlineFinish())
        tellask = build_tellask_call("".join(call.headline_parts), "".join(call.body_parts), self._calls_done)
        self._calls_done += 1
        self._call = None
        self._emit(CallFinish(tellask))

    # -- markdown and output ------------------------------------------------------------------------

    def _markdown(self, text: str) -> None:
        if not self._markdown_open:
            self._markdown_open = True
            self._emit(MarkdownStart())
        self._emit(MarkdownChunk(text))

    def _close_markdown(self) -> None:
        if self._markdown_open:
            self._markdown_open = False
            self._emit(MarkdownFinish())

    def _emit(self, event: ParserEvent) -> None:
        if self._events and isinstance(event, _TEXT_EVENTS) and type(self._events[-1]) is type(event):
            previous = self._events[-1]
            assert isinstance(previous, _TEXT_EVENTS)
            self._events[-1] = type(event)(previous.text + event.text)
        else:
            self._events.append(event)

    def _take(self) -> list[ParserEvent]:
        events, self._events = self._events, []
        return events


def segments_from_events(events: Iterable[ParserEvent]) -> list[Segment]:
    """Collect an event stream into segments, consecutive markdown merged into one segment."""
    segments: list[Segment] = []
    markdown: list[str] = []  # joined once per segment: chunks may be single characters
    for event in events:
        if isinstance(event, MarkdownChunk):
            markdown.append(event.text)
        elif isinstance(event, CallFinish):
            if markdown:
                segments.append(MarkdownSegment("".join(markdown)))
                markdown.clear()
            segments.append(event.call)
    if markdown:
        segments.append(MarkdownSegment("".join(markdown)))
    return segments


def parse_segments(text: str) -> list[Segment]:
    """Parse a whole text (one saying segment) into markdown segments and calls."""
    parser = TellaskParser()
    return segments_from_events([*parser.feed(text), *parser.finish()])


def segment_to_json(segment: Segment) -> dict[str, object]:
    """The JSON shape used by `dominds parse-tellask` (camelCase like the wire protocol)."""
    if isinstance(segment, MarkdownSegment):
        return {"kind": "markdown", "text": segment.text}
    return {
        "kind": "tellask",
        "headline": segment.headline,
        "body": segment.body,
        "firstMention": segment.first_mention,
        "mentions": list(segment.mentions),
        "tellaskSession": segment.tellask_session,
        "error": segment.error,
        "callId": segment.call_id,
    }
