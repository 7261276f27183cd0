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

import re
from typing import Any

from dominds.llm.base import ChatMessage, GenerationRequest, ImagePart
from dominds.llm.params import merged_params
from dominds.llm.retry import arguments_object, group_tool_turns, refuse_bad_params

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


def request_params(request: GenerationRequest) -> dict[str, Any]:
    """The body of one generation's ``POST /v1/messages`` (posted as built: ``sdk_clients.json_content``)."""
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
    kwargs["messages"], volatile = to_anthropic_messages(request.messages)
    if caching == "conversation":
        mark_conversation_breakpoints(kwargs["messages"], volatile, control)
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
    return kwargs


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


Position = tuple[int, int]
"""A block of the conversation: (turn, block)."""


def mark_conversation_breakpoints(turns: list[dict[str, Any]], volatile: set[Position], control: dict[str, Any]) -> None:
    """Cache breakpoints on the conversation (see the module docstring), at most three.

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
    for t, b in dict.fromkeys(chosen):
        turns[t]["content"][b]["cache_control"] = dict(control)


def _last_cacheable(
    turns: list[dict[str, Any]], volatile: set[Position], before: Position, within_turn: bool = False
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


def to_anthropic_messages(messages: list[ChatMessage]) -> tuple[list[dict[str, Any]], set[Position]]:
    """Neutral messages as alternating user/assistant turns of content blocks, and where the blocks of
    volatile messages are (never cached up to)."""
    turns: list[dict[str, Any]] = []
    volatile: set[Position] = set()
    for message in group_tool_turns(messages):
        block = _content_block(message)
        if block is None:
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [block] if message.kind == "tool_result" or not message.images else [block, *map(_image_block, message.images)]
        if turns and turns[-1]["role"] == role:
            if message.volatile:
                volatile.update((len(turns) - 1, len(turns[-1]["content"]) + i) for i in range(len(blocks)))
            turns[-1]["content"].extend(blocks)
        else:
            if message.volatile:
                volatile.update((len(turns), i) for i in range(len(blocks)))
            turns.append({"role": role, "content": blocks})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]})
        volatile = {(t + 1, b) for t, b in volatile}
    if turns[-1]["role"] != "user":
        turns.append({"role": "user", "content": [{"type": "text", "text": CONTINUE_PROMPT}]})
    return turns, volatile


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
