"""The request of one Anthropic generation: parameters, thinking and effort, prompt-cache breakpoints, messages.

Prompt caching: the API caches a prompt prefix up to a block marked ``cache_control`` and reads it
back (at a tenth of the input price) when a later request starts with the same prefix. A dialog's
prompt is system prompt + tools + a conversation that only grows, so besides the system prompt the
*conversation* gets breakpoints: on the last block of the newest user turn (written now, read by the
next generation) and on the last block of the user turn before it (the breakpoint the previous
generation wrote, read now), and just before the reminders (a *volatile* message: it moves to the newest
user message, so the prefix up to it is what stays the same when a new message arrives). At most four
breakpoints, as the API allows; ``prompt_caching: system`` or ``off`` in ``model_params.anthropic``
turns them down.

Parameters are the member's ``model_params`` as ``dominds/llm/params.py`` declares them for apiType
``anthropic``; values the API or the model (its catalog entry) would refuse are refused here, before
any request, with a message that says what to change.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from dominds.llm.base import ChatMessage, GenerationRequest, ImagePart
from dominds.llm.message_reuse import (
    Converted,
    MessageReuse,
    Piece,
    Position,
    converted_whole,
    encoded,
    json_array,
)
from dominds.llm.params import merged_params
from dominds.llm.retry import refuse_bad_params
from dominds.llm.sdk_clients import body_around
from dominds.llm.tool_history import CallIds, arguments_object, group_tool_turns

DEFAULT_MAX_TOKENS = 8192
"""When neither the member nor the catalog says the model's output limit."""
MAX_DEFAULT_MAX_TOKENS = 32000
"""The default output limit is the model's, capped here (a member may ask for more)."""
CONVERSATION_START = "(conversation start)"
"""The API wants a user message first; memories (assistant messages) may open our context."""
CONTINUE_PROMPT = "(continue)"
"""The API treats a trailing assistant message as a prefill, which thinking models refuse."""
BODY_ONLY_PARAMS = ("temperature", "top_p", "top_k", "reasoning_split")
"""Accepted by the API (or by Anthropic-compatible servers) but not keyword arguments of the SDK."""
CACHEABLE_BLOCKS = frozenset({"text", "tool_result", "tool_use", "image", "document"})
"""Blocks a ``cache_control`` may sit on (not thinking blocks)."""


def request_body(request: GenerationRequest, reuse: MessageReuse) -> bytes:
    """The body of one generation's ``POST /v1/messages``, streamed or not as the request says (posted as
    built: ``sdk_clients.body_around``); ``reuse``: the generator's kept conversions."""
    refuse_bad_params(request, "anthropic")
    params = merged_params(request.model_params, "anthropic")
    thinking = thinking_config(params)
    max_tokens = int(params.get("max_tokens") or default_max_tokens(request))
    budget = int(thinking.get("budget_tokens") or 0) if thinking else 0
    if budget and max_tokens <= budget:
        max_tokens = budget + DEFAULT_MAX_TOKENS  # the API requires room for the answer after thinking
    caching = params.get("prompt_caching", "conversation")
    caching = "off" if caching is False else str(caching)  # YAML reads a bare `off` as false
    control: dict[str, Any] = {"type": "ephemeral"}
    if params.get("cache_ttl") == "1h":
        control["ttl"] = "1h"
    kwargs: dict[str, Any] = {
        "model": request.model_name,
        "max_tokens": max_tokens,
    }
    if request.system_prompt.strip():
        system: dict[str, Any] = {"type": "text", "text": request.system_prompt}
        if caching != "off":
            # The system prompt (with the tools before it) is the long stable prefix of every turn.
            system["cache_control"] = dict(control)
        kwargs["system"] = [system]
    if request.tools:
        kwargs["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
        ]
    if params.get("stop_sequences"):
        stops = params["stop_sequences"]
        kwargs["stop_sequences"] = [stops] if isinstance(stops, str) else list(stops)
    body_only = {name: params[name] for name in BODY_ONLY_PARAMS if params.get(name) is not None}
    if body_only:
        kwargs["extra_body"] = body_only
    if thinking:
        kwargs["thinking"] = thinking
    effort = params.get("effort") or (params.get("output_config") or {}).get("effort")
    if effort:
        kwargs["output_config"] = {**(params.get("output_config") or {}), "effort": effort}
    if request.streaming:
        kwargs["stream"] = True
    converted = reuse.convert(request.messages, shared=request.shared_run)
    return conversation_json(converted, control if caching == "conversation" else None, body_around(kwargs, "messages"))


def default_max_tokens(request: GenerationRequest) -> int:
    output_length = request.model_info.get("output_length")
    if isinstance(output_length, int) and output_length > 0:
        return min(output_length, MAX_DEFAULT_MAX_TOKENS)
    return DEFAULT_MAX_TOKENS


def thinking_config(params: dict[str, Any]) -> dict[str, Any] | None:
    """``anthropic.thinking`` (``{budget_tokens}`` alone means enabled) or a ``thinking_budget``."""
    explicit = params.get("thinking")
    if isinstance(explicit, dict) and explicit:
        config = dict(explicit)
        if "type" not in config and config.get("budget_tokens"):
            config["type"] = "enabled"
        return config
    budget = params.get("thinking_budget")
    if budget:
        return {"type": "enabled", "budget_tokens": int(budget)}
    return None


def conversation_json(
    converted: Converted, control: dict[str, Any] | None, around: tuple[bytes, bytes] = (b"", b"")
) -> bytes:
    """The JSON of the conversation: the converted turns, opened by a user turn and closed by one as the
    API wants, with cache breakpoints (``control``; none when ``None``); between the two ``around`` (the
    request body's JSON before and after it).

    Built over the converted parts as they are (no copy of the list): a turn that gets a breakpoint is
    encoded again, in the list for the time of the join only, since the list is kept for the next request."""
    turns, parts = converted.outputs, converted.parts
    front = [] if turns and turns[0]["role"] == "user" else [_text_turn(CONVERSATION_START)]
    back = [] if (turns or front)[-1]["role"] == "user" else [_text_turn(CONTINUE_PROMPT)]
    whole = _Whole(front, turns, back)
    marked: dict[int, list[int]] = {}
    if control is not None:
        volatile = {(t + len(front), b) for t, b in converted.volatile} if front else converted.volatile
        for t, b in conversation_breakpoints(whole, volatile):
            marked.setdefault(t, []).append(b)
    with_marks: dict[int, bytes] = {}
    for t, blocks in marked.items():
        content = list(whole[t]["content"])
        for b in blocks:
            content[b] = {**content[b], "cache_control": dict(control or {})}
        with_marks[t] = encoded({**whole[t], "content": content})
    ends = [with_marks.get(t, encoded(turn)) for t, turn in enumerate(front)], [
        with_marks.get(len(front) + len(turns) + t, encoded(turn)) for t, turn in enumerate(back)
    ]
    inside = {t - len(front): part for t, part in with_marks.items() if 0 <= t - len(front) < len(turns)}
    plain = {t: parts[t] for t in inside}
    try:
        for t, part in inside.items():
            parts[t] = part
        return json_array(parts, *ends, around)
    finally:
        for t, part in plain.items():
            parts[t] = part


class _Turns(Protocol):
    def __len__(self) -> int: ...
    def __getitem__(self, t: int, /) -> dict[str, Any]: ...


class _Whole:
    """The turns of the conversation as sent, read in place: ``front``, ``turns``, then ``back``."""

    def __init__(self, front: list[dict[str, Any]], turns: list[dict[str, Any]], back: list[dict[str, Any]]) -> None:
        self._front, self._turns, self._back = front, turns, back

    def __len__(self) -> int:
        return len(self._front) + len(self._turns) + len(self._back)

    def __getitem__(self, t: int) -> dict[str, Any]:
        if t < 0:
            t += len(self)
        if t < len(self._front):
            return self._front[t]
        t -= len(self._front)
        return self._turns[t] if t < len(self._turns) else self._back[t - len(self._turns)]


def _text_turn(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def conversation_breakpoints(turns: _Turns, volatile: set[Position]) -> list[Position]:
    """Where the conversation's cache breakpoints go (see the module docstring), at most three.

    - before the first volatile block (the reminders, which move between generations): the stable
      prefix the next generation reads even when a new user message moved the reminders;
    - the end of the user turn before the newest one (what the previous generation wrote);
    - the end of the conversation (what the next generation reads).

    Each is found by a walk back from where it may be, which ends at the first block it can sit on: a
    walk over every block was a fixed cost per message of every request (``tests/llm/test_long_requests.py``).
    """
    chosen: list[Position] = []
    if volatile:
        chosen.extend(_last_cacheable(turns, volatile, min(volatile)))
    users = 0
    for t in range(len(turns) - 1, -1, -1):
        if turns[t]["role"] == "user":
            users += 1
            if users == 2:
                chosen.extend(_last_cacheable(turns, volatile, (t, len(turns[t]["content"])), within_turn=True))
                break
    chosen.extend(_last_cacheable(turns, volatile, (len(turns), 0)))
    return list(dict.fromkeys(chosen))


def _last_cacheable(
    turns: _Turns, volatile: set[Position], before: Position, within_turn: bool = False
) -> list[Position]:
    """The last block before ``before`` a breakpoint may sit on (``[]`` if none), in ``before``'s turn
    only when ``within_turn``."""
    t, b = before
    while t >= 0:
        blocks = turns[t]["content"] if t < len(turns) else []
        for index in range(min(b, len(blocks)) - 1, -1, -1):
            if blocks[index].get("type") in CACHEABLE_BLOCKS and (t, index) not in volatile:
                return [(t, index)]
        if within_turn:
            break
        t -= 1
        b = len(turns[t]["content"]) if t >= 0 else 0
    return []


def to_anthropic_messages(messages: list[ChatMessage], control: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Neutral messages as the API's conversation, with cache breakpoints (``control``), converted whole
    (generators convert per new message, ``message_reuse.py``, to the same JSON)."""
    return json.loads(conversation_json(converted_whole(anthropic_piece, messages), control))  # type: ignore[no-any-return]


def anthropic_piece(messages: list[ChatMessage], calls: CallIds, key: object = None) -> Piece:
    """A run of neutral messages as alternating user/assistant turns of content blocks, and where the
    blocks of volatile messages are (never cached up to)."""
    turns: list[dict[str, Any]] = []
    volatile: list[Position] = []
    for message in group_tool_turns(messages, calls):
        block = _content_block(message)
        if block is None:
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [block] if message.kind == "tool_result" or not message.images else [block, *map(_image_block, message.images)]
        if turns and turns[-1]["role"] == role:
            if message.volatile:
                volatile.extend((len(turns) - 1, len(turns[-1]["content"]) + i) for i in range(len(blocks)))
            turns[-1]["content"].extend(blocks)
        else:
            if message.volatile:
                volatile.extend((len(turns), i) for i in range(len(blocks)))
            turns.append({"role": role, "content": blocks})
    return Piece(turns, volatile)


def _content_block(message: ChatMessage) -> dict[str, Any] | None:
    if message.kind == "thinking":
        data = message.provider_data or {}
        if data.get("signature"):
            return {"type": "thinking", "thinking": message.content, "signature": data["signature"]}
        if data.get("redacted_data"):
            return {"type": "redacted_thinking", "data": data["redacted_data"]}
        return None  # unsigned thinking (another provider's, or cut before its signature) is refused
    if message.kind == "tool_call":
        return {
            "type": "tool_use",
            "id": _tool_id(message.tool_call_id),
            "name": message.tool_name or "",
            "input": arguments_object(message.arguments),
        }
    if message.kind == "tool_result":
        content: str | list[dict[str, Any]] = message.content or "(no output)"
        if message.images:  # images go inside the tool result
            content = [{"type": "text", "text": content}, *map(_image_block, message.images)]
        return {
            "type": "tool_result",
            "tool_use_id": _tool_id(message.tool_call_id),
            "content": content,
            "is_error": message.is_error,
        }
    if not message.content.strip():
        return None  # the API rejects empty text blocks
    return {"type": "text", "text": message.content}


def _image_block(image: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime, "data": image.data}}


def _tool_id(call_id: str | None) -> str:
    # Ids from other providers may hold characters the API refuses (it wants [a-zA-Z0-9_-]).
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id or "call")
