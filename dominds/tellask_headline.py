"""Tellask headline interpretation: the first mention, all mentions, `!tellaskSession`, FBR.

Pure and stdlib-only, so the streaming parser (`dominds.tellask`), the dialog engine and replay all
read a headline the same way. The grammar is described in `docs/tellask.md`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

# Error codes carried by `TellaskCall.error` (and, for the first two, by `CallStart.error`).
MISSING_MENTION_PREFIX = "missing_mention_prefix"
INVALID_MENTION_ID = "invalid_mention_id"
MULTIPLE_TELLASK_SESSIONS = "multiple_tellask_sessions"
INVALID_TELLASK_SESSION = "invalid_tellask_session"

ERROR_CODES = (MISSING_MENTION_PREFIX, INVALID_MENTION_ID, MULTIPLE_TELLASK_SESSIONS, INVALID_TELLASK_SESSION)

# `(?<!\S)`: the directive counts only at the start of the headline or after whitespace, so
# `x!tellaskSession s` or `(!tellaskSession s)` is prose, not a directive.
_SESSION_DIRECTIVE = re.compile(r"(?<!\S)!tellaskSession\s+(\S+)")
# The id is the leading run of the token (`env-check,` -> `env-check`); dotted parts are allowed
# (`env.check_1`), and every dotted part must then start with a letter (`env.1` is invalid).
_SESSION_LEADING_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*(?:\.[a-zA-Z0-9_-]+)*")
_SESSION_ID_PART = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*")


class HeadlineInfo(NamedTuple):
    """What a headline says; a tuple so callers may unpack it in this order."""

    first_mention: str | None  # None when the headline does not start with a valid `@<id>`
    mentions: tuple[str, ...]  # every mention, de-duplicated, in order of appearance
    tellask_session: str | None  # the one session id, or None (none given, or an error)
    session_error: str | None  # MULTIPLE_TELLASK_SESSIONS, INVALID_TELLASK_SESSION or None


def is_mention_char(ch: str) -> bool:
    """ASCII letters/digits, `_`, `-`, `.`, and any Unicode letter (L*) or number (N*)."""
    if ch.isascii():
        return ch.isalnum() or ch in "_-."
    return unicodedata.category(ch)[0] in "LN"


def _mention_at(text: str, at: int) -> tuple[str, int]:
    """The mention id whose `@` is at `text[at]` (trailing dots trimmed) and the index after its run."""
    end = at + 1
    while end < len(text) and is_mention_char(text[end]):
        end += 1
    return text[at + 1 : end].rstrip("."), end


def validate_headline_start(headline: str) -> tuple[str | None, str | None]:
    """`(first_mention, error)` for a block's first line: it must start with `@<mention-id>`.

    The id ends at the first non-mention character or at the end of `headline`; the streaming
    parser calls this only once that end is known, so partial input never decides early.
    """
    if not headline.startswith("@"):
        return None, MISSING_MENTION_PREFIX
    mention, _ = _mention_at(headline, 0)
    if not mention:
        return None, INVALID_MENTION_ID
    return mention, None


def extract_mentions(headline: str) -> tuple[str, ...]:
    """Every `@id` that is not glued to a preceding mention character (so `a@b` is not one)."""
    found: dict[str, None] = {}
    at = headline.find("@")
    while at >= 0:
        if at == 0 or not is_mention_char(headline[at - 1]):
            mention, end = _mention_at(headline, at)
            if mention:
                found.setdefault(mention, None)
            at = headline.find("@", end)  # a mention run never contains '@'
        else:
            at = headline.find("@", at + 1)
    return tuple(found)


def extract_tellask_session(headline: str) -> tuple[str | None, str | None]:
    """`(tellask_session, error)` from the `!tellaskSession <id>` directives of a headline.

    None given -> `(None, None)`; one distinct id (possibly repeated) -> `(id, None)`; any token
    without a valid leading id -> INVALID_TELLASK_SESSION; different ids -> MULTIPLE_TELLASK_SESSIONS.
    """
    ids: dict[str, None] = {}
    for directive in _SESSION_DIRECTIVE.finditer(headline):
        leading = _SESSION_LEADING_ID.match(directive.group(1))
        session = leading.group(0) if leading else ""
        if not session or not all(_SESSION_ID_PART.fullmatch(part) for part in session.split(".")):
            return None, INVALID_TELLASK_SESSION
        ids.setdefault(session, None)
    if not ids:
        return None, None
    if len(ids) > 1:
        return None, MULTIPLE_TELLASK_SESSIONS
    return next(iter(ids)), None


def parse_headline(headline: str) -> HeadlineInfo:
    """Interpret a complete headline (the text after the `!?` prefixes, `@` included)."""
    first_mention, _ = validate_headline_start(headline)
    session, session_error = extract_tellask_session(headline)
    return HeadlineInfo(first_mention, extract_mentions(headline), session, session_error)


def is_fbr_headline(headline: str) -> bool:
    """True when the headline, after leading whitespace, starts with the mention `@self`.

    Uses the mention rules, so `@self-check` and `@selfish` are other ids while `@self.` is `self`.
    """
    first_mention, _ = validate_headline_start(headline.lstrip())
    return first_mention == "self"
