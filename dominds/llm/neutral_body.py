"""The scripted provider's request body: the provider-neutral request as JSON, built in time independent
of the conversation's length.

A dialog's next request repeats the previous one's messages and adds a few: the messages' JSON of recent
requests is kept, a message object found at the same place in a kept request (a course's messages are the
same objects from one request to the next) is recognised by identity, in C, with no Python call per
message, and only the other messages are serialised. The bytes equal ``json.dumps`` of the whole request (``tests/llm/test_neutral_body.py``).
Bug this fixes: recording what the model saw made every scripted turn serialise the whole history, so a
turn at 3,000 turns did ~100 times the work of a turn at 10 (``tests/driver/test_long_dialogs.py``).
"""

from __future__ import annotations

import itertools
import json
import operator
from array import array
from dataclasses import asdict, dataclass, fields
from typing import Any

from dominds.llm.base import ChatMessage, GenerationRequest, SharedRun, ToolSpec, known_same_start

KEPT_REQUESTS = 256
"""How many recent requests' message JSON is kept (the least recently used dropped first): more than the
dialogs a daemon drives in turn. With 16, a seventeenth dialog taking turns with the others serialised its
whole history at every turn (``tests/llm/test_neutral_body.py``, forty conversations in turn)."""
KEPT_TOOLS = 1024
"""How many tools' JSON is kept (a tool is the same object from one request to the next)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_MESSAGE_FIELDS = tuple(f.name for f in fields(ChatMessage))


def message_json(message: ChatMessage) -> str:
    """A message's JSON: its fields but the empty ones, as ``asdict`` would give them. Not ``asdict``
    itself: it deep-copies every value first (203 ms against 45 ms for 10,000 text messages, the first
    request of a long dialog after a restart, which encodes every message once, on the event loop)."""
    out: dict[str, Any] = {}
    for key in _MESSAGE_FIELDS:
        value = getattr(message, key)
        if value in (None, False, (), ""):
            continue
        out[key] = [asdict(image) for image in value] if key == "images" else value
    return _dumps(out)


@dataclass(frozen=True)
class NeutralBody:
    """A request as the scripted provider receives it."""

    data: bytes
    """The request's JSON, UTF-8."""
    content_chars: int
    """Characters of the messages' ``content`` (what the scripted provider counts as prompt tokens, with
    the system prompt), kept per request like the JSON: summing 10,000 messages cost 4 ms of a turn."""


TAIL = 32
"""How many messages at the end of a kept request are compared one by one with a new request's (the
reminders move near the end every turn), when the context builder said nothing of them; the ones before
are compared as one list."""


_SEPARATOR = b", "


@dataclass
class _Kept:
    messages: list[ChatMessage]
    """The request's messages, as given (no request's list is changed once built): a new request that
    starts with them is known from ``shared`` (``SharedRun``: no pass over them), or else recognised by
    one list comparison (the same objects, or equal ones: equal messages have the same JSON), in C with
    no call for an identical item. Comparing every message by identity (``map(operator.is_not, …)``, a
    call and a boolean per pair) cost 0.6-0.9 ms of a turn at 10,000 messages
    (``bench/bench_turn_parts.py``); a copy of them to keep, one more pass."""
    shared: SharedRun | None
    settled: bytearray
    """The JSON of the first ``len(ends)`` messages, joined: those the context builder said later requests
    share, so a body copies them whole. Joining each message's JSON at every request cost a turn at
    10,000 messages 0.36 ms (a pass over 10,000 small objects, on a cold cache)."""
    ends: array[int]
    """Where each settled message's JSON ends in ``settled``."""
    parts: list[bytes]
    """The JSON of each message after the settled ones, UTF-8 (encoded once: encoding the joined text
    cost 3 ms of a turn at 10,000 messages)."""
    content_chars: int

    def joined(self, head: bytes, tail: bytes) -> bytes:
        """The messages' JSON, joined, between ``head`` and ``tail``: the settled ones copied whole, once."""
        rest = _SEPARATOR.join(self.parts)
        return b"".join((head, self.settled, _SEPARATOR if rest and self.settled else b"", rest, tail))

    def settle(self, count: int) -> None:
        """Join the JSON of the first ``count`` messages into ``settled`` (those already there stay)."""
        if count <= len(self.ends):
            return
        moved = self.parts[: count - len(self.ends)]
        if not moved:
            return
        start = len(self.settled) + (len(_SEPARATOR) if self.settled else 0)
        self.ends.extend(itertools.accumulate((len(_SEPARATOR) + len(part) for part in moved[1:]), initial=start + len(moved[0])))
        if self.settled:
            self.settled += _SEPARATOR
        self.settled += _SEPARATOR.join(moved)
        del self.parts[: len(moved)]

    def unsettle(self, count: int) -> None:
        """Keep only the first ``count`` messages in ``settled``; the JSON of the others goes back to ``parts``."""
        if count >= len(self.ends):
            return
        starts = [0, *(end + len(_SEPARATOR) for end in self.ends[:-1])]
        self.parts[:0] = [bytes(self.settled[a:b]) for a, b in zip(starts[count:], self.ends[count:], strict=True)]
        del self.settled[self.ends[count - 1] if count else 0 :]
        del self.ends[count:]


class NeutralBodies:
    """The message JSON of recent requests, reused where a new request has the same message object at
    the same place (the memory and Taskdoc messages are new objects each time, a course's are not)."""

    def __init__(self, tail: int = TAIL) -> None:
        self._tail = tail
        self._kept: list[_Kept] = []
        self._tools: dict[tuple[str, str, int], tuple[dict[str, Any], str]] = {}
        """(name, description, id of the parameters) → the parameters and the tool's JSON (the parameters
        are held, so their id is not reused while kept)."""

    def body(self, request: GenerationRequest) -> bytes:
        return self.build(request).data

    def build(self, request: GenerationRequest) -> NeutralBody:
        kept = self._message_parts(request.messages, request.shared_run)
        head = _dumps({"model": request.model_name, "system": request.system_prompt})
        tools = ", ".join(self._tool_json(tool) for tool in request.tools)
        tail = f'], "tools": [{tools}], "params": {_dumps(request.model_params)}, "stream": {_dumps(request.streaming)}}}'
        data = kept.joined(f'{head[:-1]}, "messages": ['.encode(), tail.encode())
        return NeutralBody(data, kept.content_chars)

    def _tool_json(self, tool: ToolSpec) -> str:
        # asdict deep-copies a tool's JSON schema: 1.8 ms of every scripted turn for the demo's seven tools.
        # Each generation makes new ToolSpecs of the same tools, so a tool is known by its name, description
        # and parameters object (the toolset's schema, the same from one generation to the next).
        key = (tool.name, tool.description, id(tool.parameters))
        found = self._tools.get(key)
        if found is not None and found[0] is tool.parameters:
            return found[1]
        text = _dumps(asdict(tool))
        if len(self._tools) >= KEPT_TOOLS:
            self._tools.clear()
        self._tools[key] = (tool.parameters, text)
        return text

    def _message_parts(self, messages: list[ChatMessage], shared: SharedRun | None = None) -> _Kept:
        best, start = self._known(messages, shared)
        if best < 0:
            best, start = self._compared(messages)
        if best < 0:
            parts = [_encoded(message) for message in messages]
            made = _Kept(messages, shared, bytearray(), array("q"), parts, sum(map(len, map(_CONTENT, messages))))
        else:
            before = self._kept.pop(best)
            before.unsettle(start)  # only messages known the same stay settled
            settled = len(before.ends)
            parts = before.parts  # its own list: the kept request is replaced by this one
            del parts[len(messages) - settled :]
            chars = before.content_chars - sum(map(len, map(_CONTENT, before.messages[len(messages) :])))
            changed = map(operator.is_not, before.messages[start:], messages[start:])
            for place in itertools.compress(range(start, settled + len(parts)), changed):
                old = before.messages[place]
                parts[place - settled] = _encoded(messages[place])
                chars += len(messages[place].content) - len(old.content)
            added = messages[settled + len(parts) :]
            parts.extend(_encoded(message) for message in added)
            chars += sum(map(len, map(_CONTENT, added)))
            made = _Kept(messages, shared, before.settled, before.ends, parts, chars)
        if shared is not None:
            made.settle(shared.start + shared.count)
        self._kept.append(made)
        del self._kept[:-KEPT_REQUESTS]
        return made

    def _known(self, messages: list[ChatMessage], shared: SharedRun | None) -> tuple[int, int]:
        """The kept request the context builder says ``messages`` shares its start with, and how many
        messages that start holds; (-1, 0) if it said nothing of one."""
        if shared is not None:
            for index in range(len(self._kept) - 1, -1, -1):
                kept = self._kept[index]
                same = known_same_start(messages, shared, kept.messages, kept.shared)
                if same:
                    return index, same
        return -1, 0

    def _compared(self, messages: list[ChatMessage]) -> tuple[int, int]:
        """The kept request sharing the most messages in place (counted in C: no call per message), and
        how many messages at its start are known equal. Only requests holding the new one's middle
        message in place are counted, when there are any: another dialog's never does, and counting all
        of 256 long ones would cost what the reuse saves."""
        kept = self._kept
        middle = len(messages) // 2
        if middle:
            probe = messages[middle]
            likely = [i for i, k in enumerate(kept) if len(k.messages) > middle and k.messages[middle] is probe]
        else:
            likely = []
        best, shared = -1, 0
        if len(likely) == 1:
            best = likely[0]  # the dialog's previous request: no count needed to choose it (a pass in C per message)
        else:
            for index in likely or range(len(kept)):
                same = sum(map(operator.is_, kept[index].messages, messages))
                # Most messages in place, not just the memory and Taskdoc messages dialogs share: taking
                # another dialog's kept request for those made both dialogs encode everything each turn.
                if same > shared and same * 2 > len(messages):
                    best, shared = index, same
        if best < 0:
            return -1, 0
        earlier = kept[best].messages
        same_head = max(0, len(earlier) - self._tail)
        return best, same_head if same_head <= len(messages) and earlier[:same_head] == messages[:same_head] else 0


_CONTENT = operator.attrgetter("content")


def _encoded(message: ChatMessage) -> bytes:
    return message_json(message).encode("utf-8")
