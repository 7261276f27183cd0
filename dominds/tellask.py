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
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from dominds.tellask_headline import (
    ERROR_CODES,
    INVALID_MENTION_ID,
    INVALID_TELLASK_SESSION,
    MISSING_MENTION_PREFIX,
    MULTIPLE_TELLASK_SESSIONS,
    HeadlineInfo,
    is_fbr_headline,
    is_mention_char,
    parse_headline,
    validate_headline_start,
)

__all__ = [
    "ERROR_CODES",
    "INVALID_MENTION_ID",
    "INVALID_TELLASK_SESSION",
    "MISSING_MENTION_PREFIX",
    "MULTIPLE_TELLASK_SESSIONS",
    "BodyChunk",
    "BodyFinish",
    "BodyStart",
    "CallFinish",
    "CallStart",
    "HeadlineChunk",
    "HeadlineFinish",
    "HeadlineInfo",
    "MarkdownChunk",
    "MarkdownFinish",
    "MarkdownSegment",
    "MarkdownStart",
    "ParserEvent",
    "Segment",
    "TellaskCall",
    "TellaskParser",
    "build_tellask_call",
    "is_fbr_headline",
    "parse_headline",
    "parse_segments",
    "segment_to_json",
    "segments_from_events",
    "tellask_call_id",
]


@dataclass(frozen=True)
class TellaskCall:
    """One parsed block. A malformed block is still a call, with `error` set; it must not be executed."""

    headline: str  # exact text incl. the leading '@' and newlines, without the '!?' prefixes
    body: str  # exact text, '' when the block has no body line
    first_mention: str | None
    mentions: tuple[str, ...]  # all mentions in the headline, de-duplicated, in order
    tellask_session: str | None
    error: str | None  # one of ERROR_CODES, or None
    call_id: str  # 8 hex chars, see `tellask_call_id`

    @property
    def is_valid(self) -> bool:
        return self.error is None

    @property
    def is_fbr(self) -> bool:
        """Fresh Boots Reasoning: the headline starts with `@self`."""
        return is_fbr_headline(self.headline)


@dataclass(frozen=True)
class MarkdownSegment:
    text: str


Segment = MarkdownSegment | TellaskCall


@dataclass(frozen=True)
class MarkdownStart:
    pass


@dataclass(frozen=True)
class MarkdownChunk:
    text: str


@dataclass(frozen=True)
class MarkdownFinish:
    pass


@dataclass(frozen=True)
class CallStart:
    """A block began. `error` is the first-line verdict only (missing_mention_prefix or
    invalid_mention_id); session errors are known once the headline is complete, in `CallFinish`."""

    error: str | None
    first_mention: str | None = None


@dataclass(frozen=True)
class HeadlineChunk:
    text: str


@dataclass(frozen=True)
class HeadlineFinish:
    pass


@dataclass(frozen=True)
class BodyStart:
    pass


@dataclass(frozen=True)
class BodyChunk:
    text: str


@dataclass(frozen=True)
class BodyFinish:
    pass


@dataclass(frozen=True)
class CallFinish:
    call: TellaskCall


ParserEvent = (
    MarkdownStart
    | MarkdownChunk
    | MarkdownFinish
    | CallStart
    | HeadlineChunk
    | HeadlineFinish
    | BodyStart
    | BodyChunk
    | BodyFinish
    | CallFinish
)

_TEXT_EVENTS = (MarkdownChunk, HeadlineChunk, BodyChunk)


def tellask_call_id(first_mention: str | None, headline: str, body: str, counter: int) -> str:
    """First 8 hex chars of MD5 over the call's content and its index in the parsing session.

    Deterministic so a replay of the same saying segment re-derives the same ids. `surrogatepass`
    keeps lone surrogates (possible in Python strings) from raising.
    """
    payload = f"tellask\n{first_mention or ''}\n{headline}\n{body}\n{counter}"
    return hashlib.md5(payload.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()[:8]


def build_tellask_call(headline: str, body: str, counter: int = 0) -> TellaskCall:
    """The call for a complete block; `counter` is the block's index among the segment's blocks."""
    first_mention, line_error = validate_headline_start(headline)
    info = parse_headline(headline)
    return TellaskCall(
        headline=headline,
        body=body,
        first_mention=first_mention,
        mentions=info.mentions,
        tellask_session=info.tellask_session,
        error=line_error or info.session_error,
        call_id=tellask_call_id(first_mention, headline, body, counter),
    )


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
            self._bang_held = False
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
