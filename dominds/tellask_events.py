"""What the Tellask parser produces: complete calls and segments, and the events it streams while the
saying text arrives (``dominds.tellask`` is the parser). A call's id is derived from its content, so a
replay of the same segment gives the same ids."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from dominds.tellask_headline import is_fbr_headline, parse_headline, validate_headline_start


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
