"""The Anthropic provider: the official ``anthropic`` SDK, streaming, extended thinking, tool use.

One ``AnthropicGenerator`` serves the whole daemon; each generation opens its own client inside
``async with`` so a cancelled generation (Stop) closes its HTTP stream at once and nothing outlives the
event loop that made it. The SDK's own retries are off (``max_retries=0``): ``retry.py`` is the only
policy, because only it knows whether something was already streamed.

Thinking blocks come back with a ``signature``; it travels through the course record's
``provider_data`` and is sent back on the next turn, which the API requires for tool-use turns.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import httpx2

from dominds.llm.base import ChatMessage, GenerationReceiver, GenerationRequest, GenerationResult
from dominds.llm.retry import (
    AttemptFailure,
    RetryPolicy,
    generate_with_retries,
    group_tool_turns,
    merged_params,
    resolve_target,
    retry_after_seconds,
)
from dominds.store.course_records import FinishReason, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 8192
KEYLESS_API_KEY = "dominds-keyless"
"""Sent when ``apiKeyEnvVar`` is null (an Anthropic-compatible local server): the SDK wants some key."""
REQUEST_TIMEOUT = httpx2.Timeout(600.0, connect=10.0)
"""Long reads (a slow model thinking), but a server that does not answer the connect fails fast."""
CONVERSATION_START = "(conversation start)"
"""The API wants a user message first; memories (assistant messages) may open our context."""
CONTINUE_PROMPT = "(continue)"
"""The API treats a trailing assistant message as a prefill, which thinking models refuse."""
BODY_ONLY_PARAMS = ("temperature", "top_p", "top_k")
"""Still accepted by the API but no longer keyword arguments of the SDK's ``messages.stream``."""

FINISH_REASONS: dict[str, FinishReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "pause_turn": "pause",
    "model_context_window_exceeded": "context_window",
}
"""The API's ``stop_reason`` in provider-neutral terms."""

IN_STREAM_ERROR_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "invalid_request_error": 400,
}
"""An ``event: error`` arrives inside a 200 stream; its ``error.type`` says which status it stands for."""


class AnthropicGenerator:
    """Generator for ``apiType: anthropic`` providers."""

    def __init__(self, retry_policy: RetryPolicy | None = None) -> None:
        self.retry_policy = retry_policy or RetryPolicy()

    async def generate(self, request: GenerationRequest, receiver: GenerationReceiver) -> GenerationResult:
        target = resolve_target(request, DEFAULT_BASE_URL)
        params = request_params(request)
        client = anthropic.AsyncAnthropic(
            api_key=target.secret or KEYLESS_API_KEY,
            base_url=target.base_url,
            max_retries=0,
            timeout=REQUEST_TIMEOUT,
        )
        async with client:

            async def attempt(tracked: GenerationReceiver) -> GenerationResult:
                return await _stream_once(client, params, tracked)

            return await generate_with_retries(
                attempt, receiver, classify=classify_error, target=target, policy=self.retry_policy
            )


async def _stream_once(
    client: anthropic.AsyncAnthropic, params: dict[str, Any], receiver: GenerationReceiver
) -> GenerationResult:
    relay = _BlockRelay(receiver)
    async with client.messages.stream(**params) as stream:
        async for event in stream:
            await relay.handle(event)
            if event.type in ("message_start", "message_delta"):
                # Input tokens are known from the first event: a stream that breaks later still has them.
                await receiver.usage_so_far(usage_of(stream.current_message_snapshot.usage, partial=True))
        message = await stream.get_final_message()
    stop_reason = getattr(message, "stop_reason", None)
    if stop_reason is None:
        # The body ended (a proxy closed the connection cleanly) before the message said why it stopped.
        raise StreamEndedEarly("the stream ended before the message was complete (no stop_reason)")
    await relay.close()
    return GenerationResult(
        usage=usage_of(getattr(message, "usage", None)),
        model=getattr(message, "model", None),
        finish_reason=FINISH_REASONS.get(str(stop_reason), "unknown"),
        provider_finish_reason=stop_reason,
    )


class _BlockRelay:
    """Turns the SDK's content-block events into receiver segments, one block at a time.

    Blocks never overlap on the wire, so neither do segments. A text segment opens on its first
    non-empty delta (no empty sayings); a thinking segment opens with its block because a block may
    carry only a signature that must still be recorded. A tool call is emitted when its block ends, with
    its arguments as streamed: when the output limit cut them, the invalid JSON reaches the tool
    runner, which tells the model, instead of the SDK's lenient parse of half an object.
    """

    def __init__(self, receiver: GenerationReceiver) -> None:
        self.receiver = receiver
        self.open: str | None = None
        self.tool_json: list[str] = []

    async def handle(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_start" and event.content_block.type == "thinking":
            await self.receiver.thinking_start()
            self.open = "thinking"
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            self.tool_json = []
        elif kind == "thinking" and event.thinking and self.open == "thinking":
            await self.receiver.thinking_chunk(event.thinking)
        elif kind == "text" and event.text:
            if self.open != "saying":
                await self.receiver.saying_start()
                self.open = "saying"
            await self.receiver.saying_chunk(event.text)
        elif kind == "input_json":
            self.tool_json.append(event.partial_json)
        elif kind == "content_block_stop":
            await self._block_done(event.content_block)

    async def _block_done(self, block: Any) -> None:
        if block.type == "thinking" and self.open == "thinking":
            signature = getattr(block, "signature", None)
            await self.receiver.thinking_finish({"signature": signature} if signature else None)
            self.open = None
        elif block.type == "redacted_thinking":
            # Encrypted reasoning: nothing to show, but the API wants it back verbatim.
            await self.receiver.thinking_start()
            await self.receiver.thinking_finish({"redacted_data": block.data})
        elif block.type == "text" and self.open == "saying":
            await self.receiver.saying_finish()
            self.open = None
        elif block.type == "tool_use":
            await self.receiver.func_call(block.id, block.name, self._arguments_json(block.input))

    def _arguments_json(self, parsed: Any) -> str:
        raw = "".join(self.tool_json)
        self.tool_json = []
        if raw.strip():
            try:
                json.loads(raw)
            except ValueError:
                return raw  # cut short (max_tokens): the tool runner reports it to the model
        return json.dumps(parsed if isinstance(parsed, dict) else {}, ensure_ascii=False)

    async def close(self) -> None:
        """A stream that ended without closing its last block still ends its segment."""
        if self.open == "thinking":
            await self.receiver.thinking_finish(None)
        elif self.open == "saying":
            await self.receiver.saying_finish()
        self.open = None


def usage_of(usage: Any, *, partial: bool = False) -> Usage:
    if usage is None:
        return Usage(available=False, partial=partial)
    numbers = {
        "input_tokens": getattr(usage, "input_tokens", None),
        "output_tokens": getattr(usage, "output_tokens", None),
        "cache_read_tokens": getattr(usage, "cache_read_input_tokens", None),
        "cache_write_tokens": getattr(usage, "cache_creation_input_tokens", None),
    }
    # Anthropic's input_tokens already excludes cache reads and writes, as Usage wants.
    return Usage(
        **{k: int(v or 0) for k, v in numbers.items()},
        available=any(v is not None for v in numbers.values()),
        partial=partial,
    )


class StreamEndedEarly(Exception):
    """The response body ended before the message did."""


def classify_error(exc: Exception) -> AttemptFailure | None:
    if isinstance(exc, StreamEndedEarly):
        return AttemptFailure(None, str(exc))
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        error_type = getattr(exc, "type", None) or _body_error_type(exc.body)
        if status < 400:  # an error event inside a streaming 200 response
            status = IN_STREAM_ERROR_STATUS.get(str(error_type), 500)
        detail = getattr(exc, "api_message", None) or exc.message
        if error_type:
            detail = f"{error_type}: {detail}"
        return AttemptFailure(status, str(detail), retry_after_seconds(exc.response.headers))
    if isinstance(exc, anthropic.APIConnectionError):
        return AttemptFailure(None, f"connection failed: {exc.message}")
    if isinstance(exc, httpx2.TransportError):  # the SDK does not wrap errors while reading the body
        return AttemptFailure(None, f"connection failed: {type(exc).__name__}: {exc}")
    return None


def _body_error_type(body: object) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        value = body["error"].get("type")
        return str(value) if value else None
    return None


# ---------------------------------------------------------------- request


def request_params(request: GenerationRequest) -> dict[str, Any]:
    """Keyword arguments of ``messages.stream`` for one generation."""
    params = merged_params(request.model_params, "anthropic")
    thinking = thinking_config(request.model_params, params)
    max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
    budget = int(thinking.get("budget_tokens") or 0) if thinking else 0
    if budget and max_tokens <= budget:
        max_tokens = budget + DEFAULT_MAX_TOKENS  # the API requires room for the answer after thinking
    kwargs: dict[str, Any] = {
        "model": request.model_name,
        "max_tokens": max_tokens,
        "messages": to_anthropic_messages(request.messages),
    }
    if request.system_prompt.strip():
        # The system prompt is the long stable prefix of every turn: cache it.
        kwargs["system"] = [
            {"type": "text", "text": request.system_prompt, "cache_control": {"type": "ephemeral"}}
        ]
    if request.tools:
        kwargs["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    if params.get("stop_sequences"):
        kwargs["stop_sequences"] = list(params["stop_sequences"])
    body_only = {name: params[name] for name in BODY_ONLY_PARAMS if params.get(name) is not None}
    if body_only:
        kwargs["extra_body"] = body_only
    if thinking:
        kwargs["thinking"] = thinking
    return kwargs


def thinking_config(model_params: dict[str, Any], params: dict[str, Any]) -> dict[str, Any] | None:
    """``anthropic.thinking`` (passed through; ``{budget_tokens}`` alone means enabled) or a ``thinking_budget``."""
    explicit = params.get("thinking")
    if isinstance(explicit, dict) and explicit:
        config = dict(explicit)
        if "type" not in config and config.get("budget_tokens"):
            config["type"] = "enabled"
        return config
    budget = params.get("thinking_budget") or model_params.get("thinking_budget")
    if budget:
        return {"type": "enabled", "budget_tokens": int(budget)}
    return None


def to_anthropic_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Neutral messages as alternating user/assistant turns of content blocks."""
    turns: list[dict[str, Any]] = []
    for message in group_tool_turns(messages):
        block = _content_block(message)
        if block is None:
            continue
        role = "assistant" if message.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]})
    if turns[-1]["role"] != "user":
        turns.append({"role": "user", "content": [{"type": "text", "text": CONTINUE_PROMPT}]})
    return turns


def _content_block(message: ChatMessage) -> dict[str, Any] | None:
    if message.kind == "thinking":
        data = message.provider_data or {}
        if data.get("signature"):
            return {"type": "thinking", "thinking": message.content, "signature": data["signature"]}
        if data.get("redacted_data"):
            return {"type": "redacted_thinking", "data": data["redacted_data"]}
        return None  # unsigned thinking (another provider's) is refused by the API
    if message.kind == "tool_call":
        return {
            "type": "tool_use",
            "id": _tool_id(message.tool_call_id),
            "name": message.tool_name or "",
            "input": _arguments_object(message.arguments),
        }
    if message.kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": _tool_id(message.tool_call_id),
            "content": message.content or "(no output)",
            "is_error": message.is_error,
        }
    if not message.content.strip():
        return None  # the API rejects empty text blocks
    return {"type": "text", "text": message.content}


def _tool_id(call_id: str | None) -> str:
    # Ids from other providers may hold characters the API refuses (it wants [a-zA-Z0-9_-]).
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id or "call")


def _arguments_object(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    if not arguments:
        return {}
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"raw_arguments": arguments}
