"""A provider's request messages and their JSON, converted per new message: what a dialog's previous
request converted is reused up to a cut, and only the messages after it are converted again.

Every API wants the whole conversation in every request, in its own shape (merged turns, grouped tool
calls, re-keyed call ids). Converting and encoding all of it at every generation cost a turn at 5,000
turns (10,000 messages) ~40 ms more than a turn at 10 (``tests/llm/test_long_requests.py``). A
conversion is a walk that carries state from one message to the next, so a request cannot be cut just
anywhere; it can at a *cut*: a plain user text right after a plain assistant text (each API starts a new
turn there, merged with nothing before), no volatile message before it (the reminders move), and no
tool call, tool result or thinking of one generation on both sides (calls are grouped with their results
and reasoning by generation). The call ids used before the cut are carried (``CallIds``), since a
repeated id is re-keyed.

A request reuses a kept conversion when its messages up to the kept cut are the same and no tool call,
tool result or thinking after the cut belongs to a generation before it; anything else is converted
whole. The messages up to the cut are known to be the same from what the context builder said of both
requests (``SharedRun``: no pass over them), or else compared as one list (a dialog's course gives the
same message objects from one generation to the next; an equal message converts the same).

A reused conversion is taken over, not copied: its lists are cut back to the cut and grown in place (a
copy of each, and of the messages up to the cut to compare the next request with, were passes over every
message: 0.1-0.2 ms each at 10,000 messages on a cold cache, and the garbage collector walked each new
list again). So a ``Converted`` is valid until the next ``convert``: a caller encodes what it sends at
once (``json_array``). The pieces together equal the conversion of the whole request at once
(``tests/llm/test_message_reuse.py``, a property test over every provider).
"""

from __future__ import annotations

import bisect
import itertools
import json
import operator
import sys
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from dominds.llm.base import ChatMessage, SharedRun, known_same_start
from dominds.llm.tool_history import CallIds

KEPT = 16
"""Conversions kept per generator, the least recently used dropped first: one per dialog that generates
in turn with the others. Each holds its messages' dicts and JSON (about the transcript's size again)."""

Position = tuple[int, int]
"""(output, block): a content block of an output message (Anthropic's volatile blocks)."""


@dataclass
class Piece:
    """The conversion of a run of messages."""

    outputs: list[dict[str, Any]]
    volatile: list[Position] = field(default_factory=list)
    """Blocks of volatile messages, by output of this piece (only Anthropic keeps them)."""


Convert = Callable[[list[ChatMessage], CallIds, Any], Piece]
"""Converts a run of messages that starts at a cut, given the call ids used before it and the request's
key (``MessageReuse.convert``)."""


@dataclass
class Converted:
    outputs: list[dict[str, Any]]
    """The request's messages in the API's shape."""
    parts: list[bytes]
    """Each output's JSON (compact, UTF-8, as the SDKs encode)."""
    volatile: set[Position]


@dataclass
class _Cut:
    at: int
    """Index of the message that starts the piece after the cut."""
    outputs: int
    """Outputs before the cut."""
    call_ids: int
    """Sanitized call ids before the cut."""
    bound: int
    """The highest genseq of a tool call, tool result or thinking before the cut (-1: none)."""


@dataclass
class _Kept:
    key: Hashable
    messages: list[ChatMessage]
    """The request's messages, as given (no request's list is changed once built): a new request that
    starts with them up to the cut is recognised from ``shared``, or else by one list comparison, in C
    with no call for an identical item. Comparing them by identity (``map(operator.is_, …)``, a call and
    a boolean per pair) cost 0.6-0.9 ms of a turn at 10,000 messages."""
    shared: SharedRun | None
    converted: Converted
    calls: CallIds
    cut: _Cut | None


_BOUND = frozenset({"tool_call", "tool_result", "thinking"})
"""Kinds a conversion groups by generation."""


def encoded(value: Any) -> bytes:
    """JSON as the SDKs encode a body: UTF-8, compact, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def joined(head: bytes, parts: list[bytes], tail: bytes, separator: bytes) -> bytes:
    """``head + separator.join(parts) + tail`` in one join over ``parts`` itself, its ends joined to
    ``head`` and ``tail`` for the call (and put back before it returns: nothing else runs meanwhile).
    Joining the parts, then the three, copied a request's body twice, and a new list of the parts cost as
    much again (1.2 ms of a turn at 10,000 messages)."""
    if not parts:
        return head + tail
    first, last = parts[0], parts[-1]
    try:
        parts[0] = head + first
        parts[-1] = parts[-1] + tail
        return separator.join(parts)
    finally:
        parts[0], parts[-1] = first, last  # also when building a piece failed (no memory): the list is shared


def json_array(
    parts: list[bytes],
    before: list[bytes] | None = None,
    after: list[bytes] | None = None,
    around: tuple[bytes, bytes] = (b"", b""),
) -> bytes:
    """The JSON array of the elements whose JSON are ``before``, ``parts`` and ``after``, between the two
    ``around`` (a request body's JSON before and after it: ``sdk_clients.body_around``), in one join over
    ``parts`` itself (``joined``): the body of a long dialog's request is copied once."""
    before, after = before or [], after or []
    if not parts:
        return around[0] + b"[" + b",".join([*before, *after]) + b"]" + around[1]
    head = around[0] + b"[" + b"".join(part + b"," for part in before)
    tail = b"".join(b"," + part for part in after) + b"]" + around[1]
    return joined(head, parts, tail, b",")


def converted_whole(convert: Convert, messages: list[ChatMessage], key: Hashable = ()) -> Converted:
    """``messages`` converted in one piece, nothing kept or reused (what ``MessageReuse`` must equal)."""
    piece = convert(messages, CallIds(), key)
    return Converted(piece.outputs, list(map(encoded, piece.outputs)), set(piece.volatile))


class MessageReuse:
    """The kept conversions of one provider's requests."""

    def __init__(self, convert: Convert, kept: int = KEPT) -> None:
        self._convert = convert
        self._limit = kept
        self._kept: list[_Kept] = []

    def convert(self, messages: list[ChatMessage], key: Hashable = (), shared: SharedRun | None = None) -> Converted:
        """``messages`` converted, valid until the next call (see the module docstring); ``key``: whatever
        else the conversion depends on (compared by ``==``, given to the conversion); ``shared``: what the
        context builder knows of the messages."""
        found = self._reusable(messages, key, shared)
        outputs: list[dict[str, Any]] = []
        parts: list[bytes] = []
        calls = CallIds()
        begin, bound = 0, -1
        new_cut: _Cut | None = None
        if found is not None and found.cut is not None:
            self._kept.remove(found)  # taken over: its lists become this request's
            new_cut = cut = found.cut  # still a cut of these messages, if none comes later (only speed depends on it)
            outputs, parts, calls = found.converted.outputs, found.converted.parts, found.calls
            del outputs[cut.outputs :], parts[cut.outputs :]
            calls.cut(cut.call_ids)
            begin, bound = cut.at, cut.bound
        next_cut = _last_cut(messages, begin, bound)
        ends = [begin, *([next_cut[0]] if next_cut else []), len(messages)]
        volatile: set[Position] = set()
        for start, end in itertools.pairwise(ends):
            if next_cut is not None and start == next_cut[0]:
                new_cut = _Cut(start, len(outputs), len(calls.order), next_cut[1])
            piece = self._convert(messages[start:end], calls, key)
            volatile.update((len(outputs) + at, block) for at, block in piece.volatile)
            outputs.extend(piece.outputs)
            parts.extend(map(encoded, piece.outputs))
        converted = Converted(outputs, parts, volatile)
        self._kept.append(_Kept(key, messages, shared, converted, calls, new_cut))
        del self._kept[: -self._limit]
        return converted

    def _reusable(self, messages: list[ChatMessage], key: Hashable, shared: SharedRun | None) -> _Kept | None:
        """The kept conversion whose cut ``messages`` can start from (the furthest one), if any."""
        best: _Kept | None = None
        for kept in reversed(self._kept):
            cut = kept.cut
            if cut is None or kept.key != key or cut.at >= len(messages) or (best and best.cut and best.cut.at >= cut.at):
                continue
            if kept.messages[cut.at - 1] is not messages[cut.at - 1] or not _starts_turn(messages[cut.at - 1], messages[cut.at]):
                # Cheap first: another dialog's kept conversion fails here. By identity: another dialog whose
                # start is equal to this one's (the same first turns) passed an equality test, and its
                # short cut cost a walk of every message after it (``_bound_after``), 1 ms at 10,000.
                continue
            same = known_same_start(messages, shared, kept.messages, kept.shared) >= cut.at
            if same or kept.messages[: cut.at] == messages[: cut.at]:
                if _bound_after(messages, cut.at) > cut.bound:
                    best = kept
        return best


def _starts_turn(before: ChatMessage, message: ChatMessage) -> bool:
    """A user text right after an assistant text, both with words (an empty one is left out of the
    request, and the texts around it merge): every API starts a new turn at it, merged with nothing
    before, and nothing after merges into what comes before it."""
    return (
        message.role == "user"
        and message.kind == "text"  # always so for a user message; said for the reader
        and bool(message.content.strip())
        and before.role == "assistant"
        and before.kind == "text"
        and bool(before.content.strip())
    )


_KIND = operator.attrgetter("kind")
_GENSEQ = operator.attrgetter("genseq")
_VOLATILE = operator.attrgetter("volatile")


def _bound_genseqs(messages: list[ChatMessage], start: int) -> tuple[list[int], list[int | None]]:
    """Where the tool calls, tool results and thinking from ``start`` on are (counted from ``start``), and
    their genseqs; found in C (no Python call per message: the first conversion of a long dialog walks
    all of it)."""
    after = messages[start:]  # a slice, not ``islice``: that steps over the first ``start`` one by one
    flags = list(map(_BOUND.__contains__, map(_KIND, after)))
    positions = list(itertools.compress(itertools.count(), flags))
    return positions, list(itertools.compress(map(_GENSEQ, after), flags))


def _bound_after(messages: list[ChatMessage], at: int) -> float:
    """The lowest genseq of a tool call, tool result or thinking from ``at`` on (``sys.maxsize`` if none;
    -inf when one has no genseq: nothing may be cut before it)."""
    _, genseqs = _bound_genseqs(messages, at)
    if None in genseqs:
        return float("-inf")
    known: list[int] = genseqs  # type: ignore[assignment]
    return float(min(known, default=sys.maxsize))


def _last_cut(messages: list[ChatMessage], begin: int, bound: int) -> tuple[int, int] | None:
    """The last cut after ``begin`` that is one in ``messages`` as they are, with the highest genseq of a
    tool call, tool result or thinking before it; ``bound``: that genseq before ``begin``. Looked for
    from the end: the last cut is a message or two before it."""
    positions, found = _bound_genseqs(messages, begin)
    if None in found:
        return None
    genseqs: list[int] = found  # type: ignore[assignment]
    highest = list(itertools.accumulate(genseqs, max, initial=bound))
    """``highest[k]``: the highest before the k-th one."""
    lowest = list(itertools.accumulate(reversed(genseqs), min, initial=sys.maxsize))[::-1]
    """``lowest[k]``: the lowest from the k-th one on."""
    volatile = next(itertools.compress(itertools.count(begin), map(_VOLATILE, messages[begin:])), len(messages))
    for index in range(volatile - 1, begin, -1):  # nothing at or after a volatile message is kept
        if _starts_turn(messages[index - 1], messages[index]):
            k = bisect.bisect_left(positions, index - begin)
            if lowest[k] > highest[k]:
                return index, highest[k]
    return None
