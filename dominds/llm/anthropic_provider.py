"""The Anthropic provider: the official ``anthropic`` SDK, streaming or not, thinking, tool use, caching.

One ``AnthropicGenerator`` per engine keeps one SDK client per endpoint and key (``sdk_clients.py``);
Stop cancels the generation, which closes its HTTP stream at once. The SDK's own retries are off
(``max_retries=0``): ``retry.py`` is the only policy, because only it knows whether something was
already streamed. The request (parameters, thinking, effort, cache breakpoints, messages) is built
in ``anthropic_request.py``.

Thinking blocks come back with a ``signature``; it travels through the course record's
``provider_data`` and is sent back on the next turn, which the API requires for tool-use turns.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
from anthropic.lib.streaming import AsyncMessageStreamManager
from anthropic.types import Message, RawMessageStreamEvent

from dominds.llm.anthropic_request import anthropic_piece, request_body
from dominds.llm.base import GenerationReceiver, GenerationRequest, GenerationResult
from dominds.llm.message_reuse import MessageReuse
from dominds.llm.retry import (
    AttemptFailure,
    EmptyReply,
    RetryPolicy,
    connection_failure,
    is_billing_error,
    retry_after_seconds,
)
from dominds.llm.sdk_clients import (
    REQUEST_TIMEOUT,
    HttpClientFactory,
    SdkGenerator,
    sdk_http_client,
)
from dominds.store.course_records import FinishReason, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
KEYLESS_API_KEY = "dominds-keyless"
"""Sent when ``apiKeyEnvVar`` is null (an Anthropic-compatible local server): the SDK wants some key."""


def _keep_parsed_message_class() -> object:
    """The SDK's stream accumulator subscripts ``ParsedMessage[ResponseFormatT]`` at every stream; pydantic
    keeps such a class only while something refers to it, so a turn that allocated enough for a full
    collection built the class again (~3,600 Python calls, every turn of a long dialog:
    ``tests/llm/test_long_requests.py``). Kept here for the process's life; a later SDK that moved the
    names only loses the saving."""
    try:
        from anthropic.lib._parse._response import ResponseFormatT
        from anthropic.types.parsed_message import ParsedMessage
    except ImportError:  # pragma: no cover - another SDK layout
        return None
    return ParsedMessage[ResponseFormatT]  # type: ignore[valid-type]


_PARSED_MESSAGE_CLASS = _keep_parsed_message_class()

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
    "billing_error": 402,
}
"""An ``event: error`` arrives inside a 200 stream; its ``error.type`` says which status it stands for."""


Prepared = bytes
"""The request's body (``anthropic_request.request_body``)."""


class AnthropicGenerator(SdkGenerator[anthropic.AsyncAnthropic, Prepared]):
    """Generator for ``apiType: anthropic`` providers."""

    default_base_url = DEFAULT_BASE_URL
    keyless_api_key = KEYLESS_API_KEY

    def make_client(self, base_url: str, api_key: str, http_client: httpx2.AsyncClient | None) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=REQUEST_TIMEOUT,
            http_client=http_client or sdk_http_client(anthropic, timeout=REQUEST_TIMEOUT),
        )

    def __init__(self, retry_policy: RetryPolicy | None = None, http_client: HttpClientFactory | None = None) -> None:
        super().__init__(retry_policy, http_client)
        self.messages = MessageReuse(anthropic_piece)

    def prepare(self, request: GenerationRequest, base_url: str) -> Prepared:
        return request_body(request, self.messages)

    async def stream_once(
        self, client: anthropic.AsyncAnthropic, prepared: Prepared, receiver: GenerationReceiver
    ) -> GenerationResult:
        return await _stream_once(client, prepared, receiver)

    async def create_once(
        self, client: anthropic.AsyncAnthropic, prepared: Prepared, receiver: GenerationReceiver
    ) -> GenerationResult:
        return await _create_once(client, prepared, receiver)

    def classify(self, exc: Exception) -> AttemptFailure | None:
        return classify_error(exc)


async def _stream_once(
    client: anthropic.AsyncAnthropic, prepared: Prepared, receiver: GenerationReceiver
) -> GenerationResult:
    relay = _BlockRelay(receiver)
    events = 0
    raw = client.post(
        "/v1/messages",
        cast_to=Message,
        content=prepared,
        stream=True,
        stream_cls=anthropic.AsyncStream[RawMessageStreamEvent],
    )
    async with AsyncMessageStreamManager(raw) as stream:
        async for event in stream:
            events += 1
            await relay.handle(event)
            if event.type in ("message_start", "message_delta"):
                # Input tokens are known from the first event: a stream that breaks later still has them.
                await receiver.usage_so_far(usage_of(stream.current_message_snapshot.usage, partial=True))
        if events == 0:
            raise EmptyReply("the server answered with an empty stream")
        message = await stream.get_final_message()
    if getattr(message, "stop_reason", None) is None:
        # The body ended (a proxy closed the connection cleanly) before the message said why it stopped.
        raise StreamEndedEarly("the stream ended before the message was complete (no stop_reason)")
    await relay.close()
    return result_of(message)


async def _create_once(
    client: anthropic.AsyncAnthropic, prepared: Prepared, receiver: GenerationReceiver
) -> GenerationResult:
    """``streaming: false``: one request; the finished blocks are then replayed to the receiver."""
    message = await client.post("/v1/messages", cast_to=Message, content=prepared)
    blocks: list[Any] = list(message.content or [])  # told apart by ``type``, as they stream
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "thinking":
            await receiver.thinking_start()
            if block.thinking:
                await receiver.thinking_chunk(block.thinking)
            await receiver.thinking_finish({"signature": block.signature} if block.signature else None)
        elif kind == "redacted_thinking":
            await receiver.thinking_start()
            await receiver.thinking_finish({"redacted_data": block.data})
        elif kind == "text" and block.text:
            await receiver.saying_start()
            await receiver.saying_chunk(block.text)
            await receiver.saying_finish()
        elif kind == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            await receiver.func_call(block.id, block.name, json.dumps(arguments, ensure_ascii=False))
    return result_of(message)


def result_of(message: Any) -> GenerationResult:
    stop_reason = getattr(message, "stop_reason", None)
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
    creation = getattr(usage, "cache_creation", None)
    long_writes = int(getattr(creation, "ephemeral_1h_input_tokens", 0) or 0) if creation is not None else 0
    # Anthropic's input_tokens already excludes cache reads and writes, as Usage wants.
    return Usage(
        **{k: int(v or 0) for k, v in numbers.items()},
        cache_write_long_tokens=long_writes,
        available=any(v is not None for v in numbers.values()),
        partial=partial,
    )


class StreamEndedEarly(Exception):
    """The response body ended before the message did."""


def classify_error(exc: Exception) -> AttemptFailure | None:
    if isinstance(exc, StreamEndedEarly | EmptyReply):
        return AttemptFailure(None, str(exc))
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        error_type = getattr(exc, "type", None) or _body_error_type(exc.body)
        if status < 400:  # an error event inside a streaming 200 response
            status = IN_STREAM_ERROR_STATUS.get(str(error_type), 500)
        detail = str(getattr(exc, "api_message", None) or exc.message)
        billing = is_billing_error((error_type, getattr(exc, "error_code", None), _body_error_code(exc.body)), detail)
        if error_type:
            detail = f"{error_type}: {detail}"
        return AttemptFailure(status, detail, retry_after_seconds(exc.response.headers), billing=billing)
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_failure(exc)
    if isinstance(exc, httpx2.TransportError):  # the SDK does not wrap errors while reading the body
        return connection_failure(exc)
    return None


def _body_error_code(body: object) -> str | None:
    """``error.details.error_code`` (Anthropic names the cause of a 429 or 402 there)."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None


def _body_error_type(body: object) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        value = body["error"].get("type")
        return str(value) if value else None
    return None
