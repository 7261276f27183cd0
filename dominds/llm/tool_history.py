"""The tool calls of a history as every API accepts them back: sanitized, and grouped with their results.

Every provider builds its request through ``group_tool_turns``. A request may be built in pieces
(``message_reuse.py``): ``CallIds`` carries the call ids the pieces before have used, so a repeated id is
re-keyed exactly as in a conversion of the whole history at once.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from dominds.llm.base import ChatMessage

NAMELESS_CALL_NOTE = (
    "(runtime note: a tool call of yours named no function, so it was removed from this conversation and "
    "never ran; its arguments were: {arguments}. Call a tool by its exact name.)"
)


@dataclass
class CallIds:
    """The ids the sanitized calls of a history got so far, as a set and in order."""

    order: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def add(self, call_id: str) -> None:
        self.order.append(call_id)
        self.seen.add(call_id)

    def cut(self, count: int) -> None:
        """Keep the first ``count`` ids only, in place (the ids are distinct: a repeated one is re-keyed)."""
        self.seen.difference_update(self.order[count:])
        del self.order[count:]


def sanitize_tool_calls(messages: list[ChatMessage], calls: CallIds | None = None) -> list[ChatMessage]:
    """The history as every API accepts it back, whatever a server streamed earlier.

    Real servers stream calls with no function name and repeat call ids (llama.cpp numbers the calls of
    each reply from ``call_0``), and a model writes arguments that are not a JSON object; replayed as
    given, the server refuses every later request of the dialog. So: a nameless call is dropped with its
    result, and a note tells the model; a repeated (or missing) id is re-keyed, its result with it;
    arguments that are not a JSON object are sent as ``{"raw_arguments": text}`` for the model to see.
    ``calls``: the ids used before ``messages`` (in a request built in pieces), which gets theirs.
    """
    calls = calls if calls is not None else CallIds()
    renamed: dict[tuple[int | None, str | None], list[str | None]] = {}
    """(genseq, id as recorded) → the ids its calls got, in order; results take them in the same order."""
    out: list[ChatMessage] = []
    for message in messages:
        if message.kind == "tool_call":
            key = (message.genseq, message.tool_call_id)
            if not (message.tool_name or "").strip():
                renamed.setdefault(key, []).append(None)
                raw = message.arguments if isinstance(message.arguments, str) else json.dumps(message.arguments or {})
                note = NAMELESS_CALL_NOTE.format(arguments=raw[:200] or "(none)")
                out.append(ChatMessage(role="user", content=note, genseq=message.genseq, runtime_note=True))
                continue
            call_id = message.tool_call_id or "call"
            if call_id in calls.seen:
                call_id = _fresh_id(call_id, message.genseq, calls.seen)
            calls.add(call_id)
            renamed.setdefault(key, []).append(call_id)
            out.append(dataclasses.replace(message, tool_call_id=call_id, arguments=arguments_object(message.arguments)))
        elif message.kind == "tool_result":
            ids = renamed.get((message.genseq, message.tool_call_id))
            if not ids:
                out.append(message)  # its call is not in this history: left as it is
                continue
            new_id = ids.pop(0)
            if new_id is not None:
                out.append(dataclasses.replace(message, tool_call_id=new_id))
        else:
            out.append(message)
    return out


def _fresh_id(call_id: str, genseq: int | None, seen: set[str]) -> str:
    n = 1
    while f"{call_id}_g{genseq}_{n}" in seen:
        n += 1
    return f"{call_id}_g{genseq}_{n}"


def arguments_object(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    if not arguments:
        return {}
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"raw_arguments": arguments}


def group_tool_turns(messages: list[ChatMessage], calls: CallIds | None = None) -> list[ChatMessage]:
    """Messages with every generation's tool calls together, directly followed by their results.

    Both APIs require each tool call to be answered right after the assistant turn that made it,
    while the course may interleave calls, results and teammate notes of one generation. The calls are
    sanitized first (``sanitize_tool_calls``, with ``calls``): every provider builds its request
    through here.
    """
    messages = sanitize_tool_calls(messages, calls)
    grouped: dict[int, list[ChatMessage]] = {}
    results: dict[int, list[ChatMessage]] = {}
    for message in messages:
        if message.genseq is not None and message.kind == "tool_call":
            grouped.setdefault(message.genseq, []).append(message)
        elif message.genseq is not None and message.kind == "tool_result":
            results.setdefault(message.genseq, []).append(message)
    out: list[ChatMessage] = []
    placed: set[int] = set()
    for message in messages:
        if message.kind not in ("tool_call", "tool_result") or message.genseq is None:
            out.append(message)
        elif message.genseq not in placed:
            placed.add(message.genseq)
            out.extend(grouped.get(message.genseq, []))
            out.extend(results.get(message.genseq, []))
    return out
